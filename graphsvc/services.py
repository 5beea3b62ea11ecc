"""The application layer the transports call: every read model and service, bound to one store.

`graphsvc.api` (REST, GraphQL, metrics, exports over HTTP) holds a `Services` and never the
store: what it reads comes from the read models (`graphsvc.read`), the explorer's reads
(`graphsvc.read.explorer`), the exports (`graphsvc.exports.render`), and what it changes goes
through the ingest and reservation services. `running` opens the store for a served process
and runs the lease keeper beside it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from topo_facts import FabricFacts, HostFacts, HostMetrics

from graphsvc.exports import drift_check
from graphsvc.exports.render import ExportFormat, Rendered, render
from graphsvc.ingest import freshness, removal
from graphsvc.ingest.service import (
    FabricIngestResult,
    Fingerprints,
    HostIngestResult,
    MetricsIngestResult,
    ingest_fabric,
    ingest_host,
    ingest_metrics,
    unchanged_batcher,
)
from graphsvc.placement import impact
from graphsvc.placement.impact_service import assess
from graphsvc.placement.shape import JobShape
from graphsvc.placement.shaped_service import ShapedResult, place_shaped
from graphsvc.read import explorer, health
from graphsvc.read.browse import Browse
from graphsvc.read.health import HealthCounts, MetricsCounts
from graphsvc.read.hosts import HostReader
from graphsvc.reservations.leases import LeaseKeeper
from graphsvc.reservations.service import ReservationService
from graphsvc.settings import Settings
from graphsvc.sites import service as sites_service
from graphsvc.sites.catalog import PriceCatalog, SiteCatalog
from graphsvc.sites.model import Fact, Site, SiteLink
from graphsvc.sites.store import FactsWritten, list_sites, site_links
from graphsvc.store.errors import StoreError
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway

__all__ = ["Gateway", "Services", "SiteServices", "running"]


class SiteServices:
    """Sites, links and prices (graphsvc.sites), bound to the gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway
        self._counted: tuple[float, int] | None = None  # (when, how many sites)

    async def count(self, *, max_age_s: float, unknown: int) -> int:
        """How many sites the catalogue holds, read at most every `max_age_s` (the query cost of a
        compareSites naming no site: the catalogue is an operator's, replaced whole and rarely, so
        a count that old is good enough, and no request pays a read for its price); `unknown`
        where the store cannot answer (the comparison itself will hear its error)."""
        now = time.monotonic()
        if self._counted is not None and now - self._counted[0] < max_age_s:
            return self._counted[1]
        try:
            count = len(await list_sites(self._gw))
        except StoreError:
            return unknown
        self._counted = (now, count)
        return count

    async def replace_sites(self, catalog: SiteCatalog, now: float) -> int:
        return await sites_service.replace_sites(self._gw, catalog, now)

    async def load_prices(self, catalog: PriceCatalog, now: float) -> FactsWritten:
        return await sites_service.load_prices(self._gw, catalog, now)

    async def set_fact(self, fact: Fact, now: float) -> FactsWritten:
        return await sites_service.set_fact(self._gw, fact, now)

    async def facts(self) -> list[Fact]:
        return await sites_service.facts(self._gw)

    async def overview(self) -> tuple[list[Site], dict[str, list[tuple[str, int, int]]]]:
        return await sites_service.sites_overview(self._gw)

    async def links(self) -> list[SiteLink]:
        return await site_links(self._gw)


class Services:
    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self._gw = gateway
        self.settings = settings
        self._fingerprints = Fingerprints()  # hosts whose topology this process wrote last (#15)
        self._unchanged = unchanged_batcher(gateway)  # group commit of unchanged host documents
        self.hosts = HostReader(gateway)
        self.browse = Browse(gateway, settings.stale_after_s)
        self.sites = SiteServices(gateway)
        self.reservations = ReservationService(
            gateway, default_ttl_s=settings.default_ttl_s, max_ttl_s=settings.max_ttl_s
        )
        self.reservations.engine.stale_after_s = settings.stale_after_s  # stale hosts are not offered

    @property
    def store_kind(self) -> str:
        return self._gw.kind

    def observe_queries(self, observer: Callable[[str, float], None]) -> None:
        """Call `observer(query name, seconds)` after every store query (Prometheus histograms)."""
        self._gw.observers.append(observer)

    # -- reads --------------------------------------------------------------------------------

    async def health(self) -> HealthCounts:
        return await health.health(self._gw, self.settings.stale_after_s)

    async def metrics(self) -> MetricsCounts:
        return await health.metrics(self._gw, self.settings.stale_after_s)

    async def export(self, fmt: ExportFormat, cluster: str | None, host: str | None) -> Rendered:
        return await render(self._gw, fmt, cluster, host)

    async def drift(self, kind: str, deployed: str, cluster: str) -> drift_check.DriftResult:
        return await drift_check.check(self._gw, kind, deployed, cluster)

    async def search(self, text: str, first: int) -> list[explorer.SearchHit]:
        return await explorer.search(self._gw, text, first)

    async def gpu_grid(self, after: str | None, first: int) -> explorer.GridPage:
        return await explorer.gpu_grid(self._gw, after, first)

    async def leaf_load(self, cluster: str) -> list[explorer.LeafLoad]:
        return await explorer.leaf_load(self._gw, cluster)

    async def leaf_hosts(self, leaf: str) -> list[explorer.CabledHost]:
        return await explorer.leaf_hosts(self._gw, leaf)

    async def impact(self, target: impact.ImpactTarget, name: str, peer: str | None) -> impact.Impact:
        """What a failure of this host, domain, switch or link would cut off (placement.impact)."""
        return await assess(self._gw, target, name, peer)

    async def place_shaped(self, job: JobShape) -> ShapedResult:
        return await place_shaped(self._gw, job, stale_after_s=self.settings.stale_after_s)

    # -- writes -------------------------------------------------------------------------------

    async def ingest_host(self, facts: HostFacts) -> HostIngestResult:
        return await ingest_host(self._gw, facts, self._fingerprints, self._unchanged)

    async def ingest_metrics(self, metrics: HostMetrics) -> MetricsIngestResult:
        return await ingest_metrics(self._gw, metrics)

    async def ingest_fabric(self, facts: FabricFacts) -> FabricIngestResult:
        return await ingest_fabric(self._gw, facts)

    async def reset_host_freshness(self, host: str, *, by: str) -> freshness.HostFreshnessReset | None:
        return await freshness.reset_host_freshness(self._gw, host, by=by)

    async def remove_host(self, host: str, *, by: str) -> removal.HostRemoved | removal.HostHeld | None:
        """Decommission a host (operators): see graphsvc.ingest.removal."""
        return await removal.remove_host(
            self._gw, host, by=by, events=self.reservations.events, fingerprints=self._fingerprints
        )


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Services]:
    """Open the configured store and keep leases expiring while the services run."""
    async with open_store(settings) as gw:
        services = Services(gw, settings)
        keeper = LeaseKeeper(
            services.reservations,
            stale_after_s=settings.stale_after_s,
            interval_s=settings.lease_check_interval_s,
            history_s=settings.reservation_history_s,
        )
        keeper.start()
        try:
            yield services
        finally:
            keeper.stop()
