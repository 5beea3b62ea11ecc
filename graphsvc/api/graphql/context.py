"""Per-request GraphQL context: the app's services, the caller, and this request's dataloaders."""

from __future__ import annotations

from graphql.error import GraphQLError
from starlette.requests import HTTPConnection
from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from graphsvc.api.graphql.loaders import Loaders
from graphsvc.security.auth import DEV, Principal, RateLimiter, Role, authenticate
from graphsvc.services import Services


class Context(BaseContext):
    def __init__(
        self,
        services: Services,
        metrics: object = None,
        principal: Principal = DEV,
        limiter: RateLimiter | None = None,
        query_budget: RateLimiter | None = None,
    ) -> None:
        super().__init__()
        self.services = services
        self.settings = services.settings
        self.reservations = services.reservations
        self.engine = services.reservations.engine
        self.loaders = Loaders(services.hosts, services.browse)  # per request: a dataloader caches for its request only
        self.metrics = metrics
        self.principal = principal
        self.limiter = limiter
        self.query_budget = query_budget
        # Set by the cost limit (graphsvc.api.graphql.cost.charge) where a compareSites was cut to
        # the wait searches the limit pays for: by response key; empty, every one at its full search.
        self.compare_wait_searches: dict[str, int] = {}

    def require(self, *roles: Role) -> Principal:
        """The caller, if its role is one of these; else a FORBIDDEN error naming the roles needed."""
        if self.principal.role not in roles:
            needed = " or ".join(r.value for r in roles)
            raise Forbidden(f"forbidden: this needs the {needed} role (you are {self.principal.role})")
        return self.principal

    def limit_mutations(self) -> None:
        if self.limiter is not None and not self.limiter.allow(self.principal.name):
            raise RateLimited("rate limited: too many mutations from this token; slow down and retry")


class Forbidden(GraphQLError):
    def __init__(self, message: str) -> None:
        super().__init__(message, extensions={"code": "FORBIDDEN", "status": 403})


class RateLimited(GraphQLError):
    def __init__(self, message: str) -> None:
        super().__init__(message, extensions={"code": "RATE_LIMITED", "status": 429})


class QueryTooExpensive(GraphQLError):
    """One operation asks for more work than any single request may (graphql_max_cost)."""

    def __init__(self, cost: int, limit: int) -> None:
        super().__init__(
            f"query too expensive: it costs {cost}, the limit is {limit}; ask for fewer GPUs, "
            "smaller pages or fewer aliases, or split it into several requests",
            extensions={"code": "QUERY_TOO_EXPENSIVE", "status": 400, "cost": cost, "limit": limit},
        )


class QueryBudgetExceeded(GraphQLError):
    """This token spent its query budget (graphql_cost_per_minute); it refills with time."""

    def __init__(self, cost: int, retry_after_s: float) -> None:
        retry = round(retry_after_s, 1)
        super().__init__(
            f"query budget exceeded: this token has spent its budget; a query costing {cost} "
            f"can run again in {retry} s",
            extensions={"code": "QUERY_BUDGET_EXCEEDED", "status": 429, "cost": cost, "retryAfterSeconds": retry},
        )


READERS = (Role.SCHEDULER, Role.OPERATOR)


Info = StrawberryInfo[Context, None]


async def get_context(request: HTTPConnection) -> Context:
    """Also for websockets (subscriptions): an HTTPConnection is either; the token is checked at the handshake."""
    return Context(
        services=request.app.state.services,
        metrics=getattr(request.app.state, "metrics", None),
        principal=authenticate(request),
        limiter=getattr(request.app.state, "limiter", None),
        query_budget=getattr(request.app.state, "query_budget", None),
    )
