"""Prometheus metrics at /metrics: request latency by operation, store query time by query
name, free GPUs by model and NVLink domain, live reservations, stale hosts, ingest counts.

Each app has its own registry (tests build many apps). Graph-derived gauges are read from
the store when Prometheus scrapes, so they are never staler than the scrape.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from graphsvc.services import Services

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.request_seconds = Histogram(
            "graphsvc_request_seconds", "API request latency by operation", ["operation"], registry=r, buckets=BUCKETS
        )
        self.query_seconds = Histogram(
            "graphsvc_store_query_seconds", "Store query time by named query", ["query"], registry=r, buckets=BUCKETS
        )
        self.ingest = Counter("graphsvc_ingest", "Fact sets ingested, by kind", ["kind"], registry=r)
        self.ingest_gpus = Counter("graphsvc_ingest_gpus", "GPUs in ingested host fact sets", registry=r)
        self.free_gpus = Gauge("graphsvc_free_gpus", "Free GPUs by model", ["model"], registry=r)
        self.domain_free = Gauge(
            "graphsvc_nvlink_domain_free_gpus", "Free GPUs by NVLink domain", ["domain", "model"], registry=r
        )
        self.live_reservations = Gauge("graphsvc_live_reservations", "Live (unexpired) reservations", registry=r)
        self.reserved_gpus = Gauge("graphsvc_reserved_gpus", "GPUs held by live reservations", registry=r)
        self.stale_hosts = Gauge("graphsvc_stale_hosts", "Hosts whose facts are older than the stale limit", registry=r)
        self.export_age = Gauge(
            "graphsvc_export_last_pull_age_seconds", "Seconds since each export format was last pulled", ["format"],
            registry=r,
        )  # fmt: skip
        self._export_pulls: dict[str, float] = {}
        # The histograms' children by label, taken once: `labels()` takes a lock and builds the
        # label tuple each call, ~2 us of every request and every store statement (stop 66's
        # profile). A child is never removed from these histograms, so the one kept is the one
        # `labels()` would answer.
        self._request_children: dict[str, Histogram] = {}
        self._query_children: dict[str, Histogram] = {}

    def export_pulled(self, fmt: str) -> None:
        """Remembers when an export format was last pulled (the age gauge is set at scrape time)."""
        self._export_pulls[fmt] = time.time()

    def observe_query(self, name: str, seconds: float) -> None:
        child = self._query_children.get(name)
        if child is None:
            child = self._query_children[name] = self.query_seconds.labels(name)
        child.observe(seconds)

    def observe_request(self, operation: str, seconds: float) -> None:
        """One HTTP request's time under its operation (method and route template)."""
        child = self._request_children.get(operation)
        if child is None:
            child = self._request_children[operation] = self.request_seconds.labels(operation)
        child.observe(seconds)

    async def refresh(self, services: Services) -> None:
        counts = await services.metrics()
        now = time.time()
        self.free_gpus.clear()
        for model, free in counts.free_by_model.items():
            self.free_gpus.labels(model).set(free)
        self.domain_free.clear()
        for d in counts.domains:
            self.domain_free.labels(d.domain, d.model).set(d.free)
        self.live_reservations.set(counts.live_reservations)
        self.reserved_gpus.set(counts.reserved_gpus)
        self.stale_hosts.set(counts.stale_hosts)
        for fmt, pulled in self._export_pulls.items():
            self.export_age.labels(fmt).set(max(0.0, now - pulled))


class RequestTimer:
    """Times every HTTP request under its route template (GraphQL is timed per operation)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/graphql"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            self.metrics.observe_request(f"{scope['method']} {path}", time.perf_counter() - started)


def metrics_router() -> APIRouter:
    router = APIRouter()

    @router.get("/metrics", include_in_schema=False)
    async def metrics_endpoint(request: Request) -> Response:
        metrics: Metrics = request.app.state.metrics
        await metrics.refresh(request.app.state.services)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return router
