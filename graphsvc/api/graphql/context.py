"""Per-request GraphQL context: the gateway and placement engine the app owns."""

from __future__ import annotations

from graphql.error import GraphQLError
from starlette.requests import HTTPConnection
from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from graphsvc.placement.engine import PlacementEngine
from graphsvc.reservations.service import ReservationService
from graphsvc.security.auth import DEV, Principal, RateLimiter, Role, authenticate
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway


class Context(BaseContext):
    def __init__(
        self,
        gateway: Gateway,
        engine: PlacementEngine,
        settings: Settings,
        reservations: ReservationService,
        metrics: object = None,
        principal: Principal = DEV,
        limiter: RateLimiter | None = None,
    ) -> None:
        super().__init__()
        self.gateway = gateway
        self.engine = engine
        self.settings = settings
        self.reservations = reservations
        self.metrics = metrics
        self.principal = principal
        self.limiter = limiter

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


READERS = (Role.SCHEDULER, Role.OPERATOR)


Info = StrawberryInfo[Context, None]


async def get_context(request: HTTPConnection) -> Context:
    """Also for websockets (subscriptions): an HTTPConnection is either; the token is checked at the handshake."""
    gateway: Gateway = request.app.state.gateway
    reservations: ReservationService = request.app.state.reservations
    return Context(
        gateway=gateway,
        engine=reservations.engine,
        settings=request.app.state.settings,
        reservations=reservations,
        metrics=getattr(request.app.state, "metrics", None),
        principal=authenticate(request),
        limiter=getattr(request.app.state, "limiter", None),
    )
