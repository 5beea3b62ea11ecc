"""Counts for the health probe (`/healthz`) and for Prometheus (`/metrics`).

Both are read when asked (a probe, a scrape), so they are never staler than the request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from graphsvc.states import GpuState
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import stored_version


@dataclass(frozen=True)
class HealthCounts:
    store: str
    graph_version: int | None
    hosts: int
    gpus_by_model: dict[str, int]
    stale_hosts: int

    @property
    def gpus(self) -> int:
        return sum(self.gpus_by_model.values())

    @property
    def degraded(self) -> bool:
        """Every host silent for the stale limit: the collectors (or their network) are down and
        placement offers nothing, though the service itself still answers."""
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
    return HealthCounts(
        store=gw.kind,
        graph_version=await stored_version(gw),
        hosts=int(row["hosts"]),
        gpus_by_model=by_model,
        stale_hosts=await stale_hosts(gw, stale_after_s, time.time()),
    )


async def metrics(gw: Gateway, stale_after_s: float) -> MetricsCounts:
    now = time.time()
    free: dict[str, int] = {}
    for row in await gw.read("cluster_summary"):
        if row["state"] == GpuState.FREE:
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
