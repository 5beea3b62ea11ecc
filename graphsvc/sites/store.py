"""The sites' reads and writes through the gateway (named queries only)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from graphsvc.sites.book import FactBook
from graphsvc.sites.catalog import SiteCatalog, fact_from_row, fact_params
from graphsvc.sites.model import CapacityKind, Fact, Site, SiteKind, SiteLink
from graphsvc.store.gateway import Gateway

log = logging.getLogger("graphsvc.sites")


async def put_sites(gw: Gateway, catalog: SiteCatalog, now: float) -> int:
    """Replace the whole site catalogue in one write; returns the number of sites. A cluster only
    the old catalogue named, holding nothing, goes with it (queries/sites_replace.cypher)."""
    rows = await gw.write("sites_replace", catalog.params(now))
    if not rows:
        return 0
    if dropped := int(rows[0].get("clusters_removed") or 0):
        log.info("site catalogue replaced: %d empty cluster(s) no site names any more removed", dropped)
    return int(rows[0]["sites"])


def _site(row: dict[str, Any]) -> Site:
    return Site(
        name=row["name"],
        kind=SiteKind(row["kind"]),
        provider=row.get("provider"),
        region=row.get("region"),
        location=row.get("location"),
        parent=row.get("parent"),
        capacity_kinds=tuple(CapacityKind(k) for k in row.get("capacity_kinds") or []),
        spot_preemption_per_h=row.get("spot_preemption_per_h"),
        clusters=tuple(str(c) for c in row.get("clusters") or [] if c is not None),
    )


async def list_sites(gw: Gateway) -> list[Site]:
    return [_site(r) for r in await gw.read("sites_list", {})]


async def site_links(gw: Gateway) -> list[SiteLink]:
    return [
        SiteLink(r["a"], r["b"], float(r["bandwidth_gbps"]), float(r["latency_ms"]))
        for r in await gw.read("site_links", {})
    ]


async def host_sites(gw: Gateway, hosts: list[str]) -> dict[str, str | None]:
    """Each host's site (None: its cluster belongs to no site)."""
    if not hosts:
        return {}
    return {str(r["host"]): r.get("site") for r in await gw.read("placement_host_sites", {"hosts": hosts})}


@dataclass(frozen=True)
class SiteCapacity:
    site: str
    model: str
    hosts: int
    gpus: int
    free: int


async def site_capacity(gw: Gateway) -> list[SiteCapacity]:
    return [
        SiteCapacity(r["site"], r["model"], int(r["hosts"]), int(r["gpus"]), int(r["free"]))
        for r in await gw.read("site_gpu_counts", {})
    ]


@dataclass(frozen=True)
class FreeGPUs:
    """Some of a site's free GPUs: of one model, in MIG mode or not, degraded or not."""

    model: str | None
    mig: bool
    degraded: bool
    gpus: int


async def site_free_gpus(gw: Gateway, site: str) -> list[FreeGPUs]:
    """The site's free GPUs by model, MIG mode and degraded health, one entry per kind: a GPU
    placement excludes whatever the free counters say is among them (queries/site_free_excluded)."""
    kinds: dict[tuple[str | None, bool, bool], int] = {}
    for r in await gw.read("site_free_excluded", {"site": site}):
        key = (r.get("model"), bool(r["mig"]), bool(r["degraded"]))
        kinds[key] = kinds.get(key, 0) + int(r["gpus"])
    return [FreeGPUs(model, mig, degraded, gpus) for (model, mig, degraded), gpus in sorted(kinds.items(), key=str)]


@dataclass(frozen=True)
class FactsWritten:
    written: list[str]
    kept_newer: list[str]  # keys whose stored fact is dated later than the one sent


async def put_facts(gw: Gateway, facts: list[Fact], now: float) -> FactsWritten:
    rows = await gw.write("cost_facts_put", fact_params(facts, now))
    written = sorted(str(r["key"]) for r in rows)
    kept = sorted({f.key for f in facts} - set(written))
    return FactsWritten(written, kept)


async def fact_book(gw: Gateway) -> FactBook:
    return FactBook([fact_from_row(r) for r in await gw.read("cost_facts", {})])


async def measured_power(gw: Gateway, models: list[str], min_utilization: float = 50.0) -> dict[str, tuple[float, int]]:
    """Per model: mean watts the collectors measured on busy GPUs, and over how many GPUs."""
    if not models:
        return {}
    rows = await gw.read("gpu_measured_power", {"models": models, "min_utilization": min_utilization})
    return {str(r["model"]): (float(r["watts"]), int(r["gpus"])) for r in rows if r.get("watts") is not None}


async def reserved_gpus(gw: Gateway, site: str, limit: int = 20_000) -> list[tuple[str, str, float]]:
    """(uuid, host, lease expiry) of the site's reserved GPUs, soonest expiry first."""
    rows = await gw.read("site_reserved_gpus", {"site": site, "limit": limit})
    return [(str(r["uuid"]), str(r["host"]), float(r["expires_at"])) for r in rows]
