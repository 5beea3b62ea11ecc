"""Counts for the health probe (`/healthz`) and for Prometheus (`/metrics`).

Both are read when asked (a probe, a scrape), so they are never staler than the request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from graphsvc.states import counts_as_free
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import stored_version

# How many stale hosts /healthz names (by name); the count is always exact.
STALE_NAMES_SHOWN = 20


@dataclass(frozen=True)
class HealthCounts:
    store: str
    graph_version: int | None
    hosts: int
    gpus_by_model: dict[str, int]
    stale_hosts: int
    stale_host_names: tuple[str, ...] = ()  # the first STALE_NAMES_SHOWN, by name

    @property
    def gpus(self) -> int:
        return sum(self.gpus_by_model.values())

    @property
    def degraded(self) -> bool:
        """Any host silent for the stale limit: placement does not offer its GPUs, so the
        cluster answers with less than it has (one host or all: a collector, its host or the
        network is down), though the service itself still answers."""
        return self.stale_hosts > 0

    @property
    def all_stale(self) -> bool:
        """Every host stale: placement offers nothing at all (the collectors are down)."""
        return bool(self.hosts) and self.stale_hosts == self.hosts


@dataclass(frozen=True)
class DomainFree:
    domain: str
    model: str
    free: int


@dataclass(frozen=True)
class MetricsCounts:
    free_by_model: dict[str, int]
    domains: list[DomainFree]
    live_reservations: int
    reserved_gpus: int
    stale_hosts: int


async def stale_hosts(gw: Gateway, stale_after_s: float, now: float) -> int:
    rows = await gw.read("stale_hosts_count", {"cutoff": now - stale_after_s})
    return int(rows[0]["stale"]) if rows else 0


async def health(gw: Gateway, stale_after_s: float) -> HealthCounts:
    rows = await gw.read("health_counts")
    row: dict[str, Any] = rows[0] if rows else {"hosts": 0, "models": []}
    by_model = {m["model"]: int(m["gpus"]) for m in row["models"] if m.get("model") is not None}
    now = time.time()
    stale = await stale_hosts(gw, stale_after_s, now)
    names: tuple[str, ...] = ()
    if stale:
        # Bounded: a probe answer stays small however many hosts went silent.
        named = await gw.read("stale_host_names", {"cutoff": now - stale_after_s, "limit": STALE_NAMES_SHOWN})
        names = tuple(str(r["name"]) for r in named)
    return HealthCounts(
        store=gw.kind,
        graph_version=await stored_version(gw),
        hosts=int(row["hosts"]),
        gpus_by_model=by_model,
        stale_hosts=stale,
        stale_host_names=names,
    )


async def metrics(gw: Gateway, stale_after_s: float) -> MetricsCounts:
    now = time.time()
    free: dict[str, int] = {}
    for row in await gw.read("cluster_summary"):
        if counts_as_free(row["state"], row["health"]):
            free[row["model"]] = free.get(row["model"], 0) + int(row["gpus"])
    domains = [DomainFree(r["domain"], r["model"], int(r["free"])) for r in await gw.read("metrics_domains")]
    live = await gw.read("reservations/live_count", {"now": now})
    return MetricsCounts(
        free_by_model=free,
        domains=domains,
        live_reservations=int(live[0]["reservations"] or 0) if live else 0,
        reserved_gpus=int(live[0]["gpus"] or 0) if live else 0,
        stale_hosts=await stale_hosts(gw, stale_after_s, now),
    )
