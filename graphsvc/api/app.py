"""The FastAPI application: one `Services` per process (the store behind it opened in the lifespan)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import Scope

import graphsvc
from graphsvc.api.errors import install_error_handlers
from graphsvc.api.exports import router as exports_router
from graphsvc.api.graphql.context import get_context
from graphsvc.api.graphql.schema import make_schema
from graphsvc.api.limits import BodyPolicy, BodySizeLimit
from graphsvc.api.metrics import Metrics, RequestTimer, metrics_router
from graphsvc.api.rest import router
from graphsvc.api.rest_reservations import router as fast_path_router
from graphsvc.api.sites_rest import router as sites_router
from graphsvc.security.auth import PRINCIPAL_SCOPE_KEY, RateLimiter, Role, TokenStore, principal_for
from graphsvc.services import Gateway, Services, running
from graphsvc.settings import Settings
from graphsvc.ui import mount_ui
from graphsvc.ui.offline import LocalGraphiQLRouter, mount_api_docs

# Container objects allocated (less those freed) before the collector walks the young generation;
# CPython's default is 700. A placement answer holds a few thousand young lists and dicts at its
# peak (the store's rows, the candidates), so at 700 the collector ran ~5.5 times per multi-host
# answer and walked them each time, 0.2-0.3 ms of a ~7 ms answer; at 5,000 about once per ten
# GraphQL answers and once per 60 REST ones, 0.07 ms an answer as at 20,000 (docs/benchmarks.md,
# Placement latency, "Stop 57, second step"). Kept at that: cyclic garbage (~200 small objects a request)
# waits for the next collection, and a larger threshold lets more of it wait.
YOUNG_COLLECTION_THRESHOLD = 5_000


class _Heap:
    """What the services started in this process have set (tests start several whose lifespans
    overlap): the first start saves the collector's thresholds, the last stop restores them."""

    holders = 0
    thresholds: tuple[int, int, int] = (700, 10, 10)


def freeze_startup_heap() -> None:
    """Move every object alive once the service has started (modules, schemas, the GraphQL
    schema, the store client) out of the garbage collector's reach (`gc.freeze`), after one
    full collection, and collect the young generation less often (YOUNG_COLLECTION_THRESHOLD).
    The frozen objects live as long as the process, yet each full collection walked all of
    them: ~0.1 s, a stop of every request in flight, once per few hundred reservations (#15:
    0.2-0.4 ms of the service's CPU per reserve+release cycle, and the p99). Called once the
    lifespan has opened the store; benchmarks call it where the server would."""
    gc.collect()
    gc.freeze()
    if _Heap.holders == 0:
        _Heap.thresholds = gc.get_threshold()
    _Heap.holders += 1
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, _Heap.thresholds[1], _Heap.thresholds[2])


def thaw_startup_heap() -> None:
    """Undo `freeze_startup_heap` when the last service started in this process stops: what
    they held becomes garbage it may collect again, at the thresholds it had before."""
    _Heap.holders = max(0, _Heap.holders - 1)
    if _Heap.holders == 0:
        gc.unfreeze()
        gc.set_threshold(*_Heap.thresholds)


def _install(app: FastAPI, services: Services) -> None:
    app.state.services = services
    app.state.reservations = services.reservations
    services.observe_queries(app.state.metrics.observe_query)


def create_app(settings: Settings | None = None, *, gateway: Gateway | None = None) -> FastAPI:
    """Build the app; tests may hand in an open gateway, otherwise the lifespan opens the store."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if gateway is not None:
            yield
            return
        async with running(settings) as services:
            _install(app, services)
            freeze_startup_heap()
            try:
                yield
            finally:
                thaw_startup_heap()

    app = FastAPI(
        title="graphsvc",
        version=graphsvc.__version__,
        description="Topology knowledge graph for AI compute placement.",
        lifespan=lifespan,
        docs_url=None,  # served from local files by mount_api_docs, never from a CDN
        redoc_url=None,
        # FastAPI's own OpenTelemetry spans, metrics and logs, only where the operator asks
        # (GRAPHSVC_OPENTELEMETRY, with an SDK or agent of theirs): the service's metrics are
        # /metrics, and with them on every request asked OpenTelemetry for its three global
        # providers (a trivial route 41 -> 36 us; docs/benchmarks.md, "Stop 52").
        telemetry=None if settings.opentelemetry else {"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.tokens = TokenStore.load(settings.tokens_file, settings.tokens)
    app.state.limiter = RateLimiter(settings.mutation_rate_per_minute, settings.mutation_burst)
    app.state.query_budget = RateLimiter(settings.graphql_cost_per_minute, settings.graphql_cost_burst)
    if gateway is not None:
        _install(app, Services(gateway, settings))
    install_error_handlers(app)
    # The REST fast path for place/reserve/release (graphsvc/api/rest_reservations.py) first and at
    # the top level: routes are matched in order, a scheduler's per-job calls should not be compared
    # against every other, and each level of included routers is scanned twice per request.
    app.include_router(fast_path_router)
    app.include_router(router)
    app.include_router(metrics_router())
    app.include_router(exports_router)
    app.include_router(sites_router)  # PUT/GET /v1/sites, PUT /v1/prices (docs/sites.md)
    mount_ui(app)
    mount_api_docs(app)
    app.include_router(
        LocalGraphiQLRouter(  # StrictGraphQLRouter + GraphiQL from local files + graphql-sse
            make_schema(dev=settings.dev_mode),
            context_getter=get_context,
            graphql_ide="graphiql" if settings.dev_mode else None,
        ),
        prefix="/graphql",
    )

    def policy_for(scope: Scope) -> BodyPolicy:
        header = next((v for k, v in scope.get("headers", []) if k == b"authorization"), b"")
        principal = principal_for(app.state, header.decode("latin-1"))
        scope[PRINCIPAL_SCOPE_KEY] = principal  # the route's `caller` reads it: one lookup a request
        if principal is None:
            return BodyPolicy(settings.max_anonymous_body_bytes, authenticated=False)
        if principal.role is Role.OPERATOR and scope["path"] == "/v1/fabric":
            return BodyPolicy(settings.max_fabric_body_bytes)
        return BodyPolicy(settings.max_body_bytes)

    app.add_middleware(BodySizeLimit, policy_for=policy_for)
    app.add_middleware(RequestTimer, metrics=app.state.metrics)
    return app
