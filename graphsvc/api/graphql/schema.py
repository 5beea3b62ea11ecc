"""The GraphQL schema: the root Query composed from the browsing and placement resolvers.

Limits are on by default (depth, aliases, tokens, page sizes). Errors the code expects
(bad input, nothing fits, not found) are typed results; anything else is masked to
"Unexpected error." for the caller and logged with its trace by strawberry's logger.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import strawberry
from graphql import (
    GraphQLArgument,
    GraphQLFieldResolver,
    GraphQLResolveInfo,
    GraphQLSchema,
    GraphQLUnionType,
    get_named_type,
)
from graphql.error import GraphQLError
from strawberry.extensions import (
    DisableIntrospection,
    MaskErrors,
    MaxTokensLimiter,
    ValidationCache,
)
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from graphsvc.api.graphql import reservations as res
from graphsvc.api.graphql.context import READERS, Forbidden, Info, RateLimited
from graphsvc.api.graphql.cost import QueryCostLimit
from graphsvc.api.graphql.drift import DriftFormat, DriftResult
from graphsvc.api.graphql.drift import drift as drift_resolver
from graphsvc.api.graphql.elastic import ElasticMutations, ElasticQuery
from graphsvc.api.graphql.errors import ValidationError
from graphsvc.api.graphql.executor import PlainObjectsExecutionContext
from graphsvc.api.graphql.explorer import (
    CabledHost,
    GPUGrid,
    LeafLoad,
    SearchHit,
    cabled_hosts,
    gpu_grid,
)
from graphsvc.api.graphql.impact import ImpactQuery
from graphsvc.api.graphql.inputs import GPUFilter, HostFilter, PlacementRequestInput, unprintable_argument
from graphsvc.api.graphql.limiter_rules import limit_rules
from graphsvc.api.graphql.operation_choice import OneOperationOrNamed
from graphsvc.api.graphql.operator import OperatorMutations
from graphsvc.api.graphql.parser_cache import SafeParserCache
from graphsvc.api.graphql.placement import place, selects_infeasible
from graphsvc.api.graphql.reservations import (
    PreemptionPlanResult,
    Reservation,
    ReservationFilter,
    ReservationMutations,
    Subscription,
)
from graphsvc.api.graphql.shaped import ShapedQuery
from graphsvc.api.graphql.sites import SitesMutations, SitesQuery
from graphsvc.api.graphql.store_errors import StoreErrors, should_log
from graphsvc.api.graphql.timing import GraphQLTimer
from graphsvc.api.graphql.types import (
    ClusterSummary,
    Fabric,
    FabricPath,
    GPUConnection,
    Host,
    HostConnection,
    PlacementResult,
)
from graphsvc.errors import DomainError

log = logging.getLogger("graphsvc.graphql")

MAX_TOKENS = 2000


@strawberry.type
class Query:
    @strawberry.field(description="GPUs by model, state and health; NVLink domains; stale hosts.")
    async def cluster_summary(self, info: Info) -> ClusterSummary:
        info.context.require(*READERS)
        return await info.context.services.browse.cluster_summary()

    @strawberry.field(description="Hosts by name, filtered, paginated (first <= 500).")
    async def hosts(
        self, info: Info, filter: HostFilter | None = None, first: int = 100, after: str | None = None
    ) -> HostConnection:
        info.context.require(*READERS)
        return await info.context.services.browse.hosts_page(filter or HostFilter(), first, after)

    @strawberry.field(description="GPUs by uuid, filtered, paginated (first <= 500).")
    async def gpus(
        self, info: Info, filter: GPUFilter | None = None, first: int = 100, after: str | None = None
    ) -> GPUConnection:
        info.context.require(*READERS)
        return GPUConnection.of(await info.context.services.browse.gpus_page(filter or GPUFilter(), first, after))

    @strawberry.field(
        description=(
            "Hosts, switches and GPUs by partial or approximate name, best first "
            "(first <= 100; text <= 256 characters)."
        )
    )
    async def search(self, info: Info, text: str, first: int = 20) -> list[SearchHit]:
        info.context.require(*READERS)
        return await info.context.services.search(text, first)

    @strawberry.field(description="Every GPU's drawing state as plain rows, by uuid (first <= 5000), for the overview.")
    async def gpu_grid(self, info: Info, first: int = 5000, after: str | None = None) -> GPUGrid:
        info.context.require(*READERS)
        return gpu_grid(await info.context.services.gpu_grid(after, first))

    @strawberry.field(description="Per leaf switch: GPUs whose nearest NIC is cabled to it, and how many are free.")
    async def leaf_load(self, info: Info, cluster: str = "default") -> list[LeafLoad]:
        info.context.require(*READERS)
        return await info.context.services.leaf_load(cluster)

    @strawberry.field(description="The hosts with a NIC cabled to this switch, by name.")
    async def leaf_hosts(self, info: Info, leaf: str) -> list[CabledHost]:
        info.context.require(*READERS)
        ctx = info.context
        return cabled_hosts(await ctx.services.leaf_hosts(leaf), ctx.settings.stale_after_s)

    @strawberry.field(description="One host: GPUs, NVLink matrix, PCIe/NUMA placement, NICs. Null if unknown.")
    async def host(self, info: Info, name: str) -> Host | None:
        info.context.require(*READERS)
        ctx = info.context
        header = await ctx.loaders.header.load(name)
        return Host.of(header, time.time(), ctx.settings.stale_after_s) if header is not None else None

    @strawberry.field(description="A cluster's switches with their uplinks, paginated by name.")
    async def fabric(
        self, info: Info, cluster: str = "default", tier: str | None = None, first: int = 200, after: str | None = None
    ) -> Fabric:
        info.context.require(*READERS)
        return await info.context.services.browse.fabric(cluster, tier, first, after)

    @strawberry.field(description="Switch hops and bottleneck bandwidth between two hosts. Null if either is unknown.")
    async def fabric_path(self, info: Info, from_host: str, to_host: str) -> FabricPath | None:
        info.context.require(*READERS)
        return await info.context.services.browse.fabric_path(from_host, to_host)

    @strawberry.field(description="Ranked places where a job can run, each with its reason; or why none fits.")
    async def placement(self, info: Info, request: PlacementRequestInput) -> PlacementResult:
        info.context.require(*READERS)
        return await place(info.context.engine, request.to_request(), explain=selects_infeasible(info))

    @strawberry.field(
        description="Which reservations a request of this priority would displace; changes nothing. "
        "An invalid request is a ValidationError, as for reserve."
    )
    async def preemption_plan(self, info: Info, request: PlacementRequestInput, priority: int) -> PreemptionPlanResult:
        info.context.require(*READERS)
        return await res.preemption_plan(info, request, priority)

    @strawberry.field(description="One reservation by id, null if unknown.")
    async def reservation(self, info: Info, id: str) -> Reservation | None:
        info.context.require(*READERS)
        return await res.reservation(info, id)

    @strawberry.field(description="Reservations by id, filtered by holder and state (first <= 500).")
    async def reservations(
        self, info: Info, filter: ReservationFilter | None = None, first: int = 100, after: str | None = None
    ) -> list[Reservation]:
        info.context.require(*READERS)
        return await res.reservations(info, filter, first, after)

    @strawberry.field(
        description="Where a deployed scheduler copy (topology.conf, HyperNodes, labels) differs from the graph."
    )
    async def drift(self, info: Info, format: DriftFormat, deployed: str, cluster: str = "default") -> DriftResult:
        info.context.require(*READERS)
        return await drift_resolver(info.context.services, format, deployed, cluster)

    @strawberry.field(description='The same from the compact text form, e.g. "8xH100 nvlink=full-mesh ib-hops<=1".')
    async def placement_text(self, info: Info, text: str) -> PlacementResult:
        info.context.require(*READERS)
        return await place(info.context.engine, None, text=text, explain=selects_infeasible(info))


def _too_long_number(error: GraphQLError) -> bool:
    """graphql-core's validation of an Int literal past Python's 4,300-digit limit on int(): it
    reports the ValueError it caught (a 5,000-digit `first:` was masked as "Unexpected error." and
    logged as a bug, with the whole literal in its message)."""
    original = error.original_error
    return isinstance(original, ValueError) and "integer string conversion" in str(original) and error.path is None


def _told_too_long(error: GraphQLError) -> GraphQLError:
    """The validation error a too-long number is told as, short, with its place in the document."""
    digits = len(getattr(error.nodes[0], "value", "")) if error.nodes else 0
    size = f" ({digits} characters)" if digits else ""
    return GraphQLError(
        f"Number too long{size}: an Int is a 32-bit integer",
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
    )


class MaskUnexpected(MaskErrors):
    """strawberry's MaskErrors (`_mask` says what it masks), a too-long number told as such."""

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        return _told_too_long(error) if _too_long_number(error) else super().anonymise_error(error)


def _mask(error: GraphQLError) -> bool:
    """Mask what the code did not mean to say; keep GraphQL's own validation messages and our
    deliberate refusals (FORBIDDEN, RATE_LIMITED), which carry no original exception. A variable
    of the wrong type (`gpus: "8"`, an unknown input field) is GraphQL's own message too, carried
    as the original error of its "Variable '$i' has invalid value" error: it was masked as
    "Unexpected error." and logged as a bug, where the same mistake written inline was told. Such
    an error has no path; one with a path came from executing a field (a value the schema cannot
    serialise, say) and is ours, masked and logged."""
    # Logged by Schema.process_errors, which sees every error; a too-long number is "masked" to
    # the short message MaskUnexpected tells it with.
    return not _expected(error) or _too_long_number(error)


def _expected(error: GraphQLError) -> bool:
    """The caller's mistake or a deliberate refusal, told as it is (`_mask`)."""
    original = error.original_error
    # A query or mutation sent over the old `graphql-ws` protocol, which carries subscriptions only.
    if original is None or isinstance(original, (Forbidden, RateLimited, DomainError, InvalidOperationTypeError)):
        return True
    if _too_long_number(error):
        return True
    return isinstance(original, GraphQLError) and error.path is None


# Refusals that may be abuse (a token probing what it may not do, flooding, or asking for too
# much work): an operator watching WARNING should see them. Other mistakes are the caller's own.
WARN_CODES = frozenset({"FORBIDDEN", "RATE_LIMITED", "QUERY_TOO_EXPENSIVE", "QUERY_BUDGET_EXCEEDED"})
LOGGED_CHARS = 300  # of a message, which may quote what the client sent


class SubscriptionOverHTTP(InvalidOperationTypeError):
    """A subscription sent as a plain GET or POST: strawberry ran its root field as a query's, which
    cannot answer an event stream ("Unexpected error.", and a traceback logged at ERROR per request)."""

    def __init__(self) -> None:
        super().__init__(OperationType.SUBSCRIPTION)

    def as_http_error_reason(self, method: str) -> str:
        return (
            f"subscriptions are not served over {method}: open a WebSocket to /graphql "
            "(graphql-transport-ws) and subscribe there"
        )


class Schema(strawberry.Schema):
    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Queries and mutations (GET, POST): a subscription is refused with a 400 saying where
        subscriptions are served (SubscriptionOverHTTP); WebSockets subscribe through `subscribe`."""
        allowed = set(allowed_operation_types or (OperationType.QUERY, OperationType.MUTATION))
        try:
            return await super().execute(
                query,
                variable_values=variable_values,
                context_value=context_value,
                root_value=root_value,
                operation_name=operation_name,
                allowed_operation_types=allowed - {OperationType.SUBSCRIPTION},
                operation_extensions=operation_extensions,
            )
        except InvalidOperationTypeError as err:
            if err.operation_type is OperationType.SUBSCRIPTION:
                raise SubscriptionOverHTTP() from None
            raise

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Each error logged once, by this logger (graphsvc.graphql): a refusal that may be abuse
        (WARN_CODES) at WARNING, with its code and token; a caller's plain mistake (a typo, a
        variable of the wrong type) at INFO; both one line, "graphql request refused: ...".
        strawberry logged every error at ERROR with a traceback. An unexpected error stays ERROR
        with its traceback (`_mask` masks it, and an error raised in a schema extension never
        reaches `_mask`); a store outage is logged by graphsvc.store.outage_log."""
        for error in errors:
            if not should_log(error):
                continue
            if not _expected(error):
                log.error("unexpected error in %s", error.path, exc_info=error.original_error)
                continue
            message = _told_too_long(error).message if _too_long_number(error) else error.message
            line = (message.splitlines() or [""])[0][:LOGGED_CHARS]
            code = (error.extensions or {}).get("code")
            if code in WARN_CODES:
                who = getattr(getattr(getattr(execution_context, "context", None), "principal", None), "name", "?")
                log.warning("graphql request refused (%s, token %s): %s", code, who, line)
            else:
                log.info("graphql request refused: %s", line)


def _refuse_unprintable_text(schema: GraphQLSchema) -> None:
    """Every mutation that can answer a ValidationError answers one for unprintable argument text
    (inputs.unprintable_argument), before its resolver runs: before any store work, and the same
    on both stores (a NUL went to the store: FalkorDB refused the statement, an untyped error and a
    WARNING; Neo4j reserved nothing, or wrote a cost fact holding it). Like an argument of the
    wrong type, it is refused before the role check. Wrapping graphql-core's resolvers here, once,
    costs the queries nothing."""
    mutation = schema.mutation_type
    if mutation is None:
        return
    for field in mutation.fields.values():
        answers = get_named_type(field.type)
        members = answers.types if isinstance(answers, GraphQLUnionType) else (answers,)
        if field.resolve is not None and any(m.name == "ValidationError" for m in members):
            field.resolve = _checking_text(field.resolve, field.args)


def _checking_text(resolve: GraphQLFieldResolver, args: dict[str, GraphQLArgument]) -> GraphQLFieldResolver:
    def checked(source: Any, info: GraphQLResolveInfo[Any], **values: Any) -> Any:
        hit = unprintable_argument(args, values)
        if hit is not None:
            return ValidationError(field=hit[0], message=hit[1])
        return resolve(source, info, **values)

    return checked


def make_schema(*, dev: bool) -> strawberry.Schema:
    """The schema; outside development mode introspection is off (GraphiQL too, in the router)."""
    extras = [] if dev else [DisableIntrospection]
    made = Schema(
        query=merge_types("Query", (Query, ShapedQuery, ImpactQuery, SitesQuery, ElasticQuery)),
        mutation=merge_types("Mutation", (ReservationMutations, OperatorMutations, SitesMutations, ElasticMutations)),
        subscription=Subscription,
        extensions=[*_EXTENSIONS, *extras],
        execution_context_class=PlainObjectsExecutionContext,
    )
    _refuse_unprintable_text(made._schema)
    return made


_EXTENSIONS = [
    limit_rules,  # depth and alias rules built once, so ValidationCache hits (limiter_rules.py)
    lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
    lambda: MaskUnexpected(should_mask_error=_mask),
    StoreErrors,  # after MaskErrors: store outages become typed errors before the masking sees them
    OneOperationOrNamed,  # before the cost: it prices the operation that would run
    QueryCostLimit,
    GraphQLTimer,
    # Schedulers send the same few query documents again and again.
    lambda: SafeParserCache(maxsize=256),
    lambda: ValidationCache(maxsize=256),
]

schema = make_schema(dev=True)
