"""Browsing read models: the cluster summary, pages of hosts and GPUs, the fabric, host-to-host paths.

Values are frozen dataclasses named as the GraphQL schema names them; the GraphQL layer wraps
most of them with strawberry as they are (`graphsvc.api.graphql.types`), so a field is named
once. Pages are keyset pages (the cursor is the last key seen), at most `graphsvc.paging.MAX_PAGE` long.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphsvc.paging import page_size
from graphsvc.placement.model import Host as PlacementHost
from graphsvc.placement.model import hops
from graphsvc.read.hosts import TopologyGpu, gpu_from_row
from graphsvc.states import counts_as_free
from graphsvc.store.gateway import Gateway


@dataclass(frozen=True, kw_only=True)
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@dataclass(frozen=True, kw_only=True)
class ModelCount:
    model: str
    state: str
    health: str
    gpus: int


@dataclass(frozen=True, kw_only=True)
class DomainCount:
    kind: str | None
    size: int | None
    domains: int
    free_gpus: int


@dataclass(frozen=True, kw_only=True)
class ClusterCount:
    """One cluster: its hosts, and the switches of its fabric (none until a fabric import)."""

    name: str
    hosts: int
    switches: int


@dataclass(frozen=True, kw_only=True)
class ClusterSummary:
    hosts: int
    gpus: int
    free_gpus: int
    stale_hosts: int
    gpus_by_model: list[ModelCount]
    nvlink_domains: list[DomainCount]
    clusters: list[ClusterCount]


@dataclass(frozen=True, kw_only=True)
class HostSummary:
    name: str
    cluster: str | None
    rack: str | None
    scalable_unit: str | None
    gpu_model: str | None
    gpu_count: int | None
    free_gpus: int | None
    age_seconds: float | None
    stale: bool


@dataclass(frozen=True, kw_only=True)
class HostConnection:
    nodes: list[HostSummary]
    page_info: PageInfo


@dataclass(frozen=True, kw_only=True)
class HostFilter:
    cluster: str | None = None
    rack: str | None = None
    scalable_unit: str | None = None
    model: str | None = None
    min_free_gpus: int = 0
    stale_only: bool = False


@dataclass(frozen=True, kw_only=True)
class GPUFilter:
    model: str | None = None
    state: str | None = None  # as stored; an unknown state matches no GPU
    health: str | None = None
    host: str | None = None
    min_memory_gib: float | None = None


@dataclass(frozen=True)
class LocatedGpu:
    """A GPU with the host (and its rack and scalable unit) it is in."""

    gpu: TopologyGpu
    host: str
    rack: str | None
    scalable_unit: str | None


@dataclass(frozen=True)
class GpuPage:
    nodes: list[LocatedGpu]
    page_info: PageInfo


@dataclass(frozen=True, kw_only=True)
class SwitchLink:
    to: str
    links: int | None
    bandwidth_gbps: float | None


@dataclass(frozen=True, kw_only=True)
class Switch:
    name: str
    tier: str
    scalable_unit: str | None
    rail: int | None
    model: str | None
    free_gpus: int | None
    nics: int
    uplinks: list[SwitchLink]


@dataclass(frozen=True, kw_only=True)
class Fabric:
    switches: list[Switch]
    page_info: PageInfo


@dataclass(frozen=True, kw_only=True)
class FabricPath:
    from_host: str
    to_host: str
    hops: int | None
    bottleneck_gbps: float | None


def more_after(page: Sequence[object], rows: Sequence[object]) -> bool:
    """Whether a page read as `first + 1` rows has more after it; never for an empty page.

    An empty page has no end cursor, so "more follow" sent a client following hasNextPage and
    endCursor back to the start, forever (`first: 0` or below, graphsvc.paging): it says no more.
    """
    return bool(page) and len(rows) > len(page)


def is_stale(received_at: float | None, now: float, stale_after_s: float) -> bool:
    return bool(received_at and now - received_at > stale_after_s)


def age_seconds(received_at: float | None, now: float) -> float | None:
    return round(now - received_at, 3) if received_at else None


class Browse:
    """The browsing reads, bound to one gateway and the service's stale limit."""

    def __init__(self, gateway: Gateway, stale_after_s: float) -> None:
        self.gw = gateway
        self.stale_after_s = stale_after_s

    async def stale_hosts(self, now: float | None = None) -> int:
        cutoff = (time.time() if now is None else now) - self.stale_after_s
        rows = await self.gw.read("stale_hosts_count", {"cutoff": cutoff})
        return int(rows[0]["stale"]) if rows else 0

    async def cluster_summary(self) -> ClusterSummary:
        rows = await self.gw.read("cluster_summary")
        domains = await self.gw.read("domain_summary")
        counts = await self.gw.read("health_counts")
        clusters = await self.gw.read("clusters")
        return ClusterSummary(
            hosts=int(counts[0]["hosts"]) if counts else 0,
            gpus=sum(int(r["gpus"]) for r in rows),
            free_gpus=sum(int(r["gpus"]) for r in rows if counts_as_free(r["state"], r["health"])),
            stale_hosts=await self.stale_hosts(),
            gpus_by_model=[
                ModelCount(model=r["model"], state=r["state"], health=r["health"], gpus=r["gpus"]) for r in rows
            ],
            nvlink_domains=[
                DomainCount(
                    kind=r["kind"], size=r["size"], domains=int(r["domains"]), free_gpus=int(r["free_gpus"] or 0)
                )
                for r in domains
            ],
            clusters=[
                ClusterCount(name=r["name"], hosts=int(r["hosts"]), switches=int(r["switches"])) for r in clusters
            ],
        )

    async def hosts_page(self, flt: HostFilter, first: int, after: str | None) -> HostConnection:
        n = page_size(first)
        now = time.time()
        rows = await self.gw.read(
            "hosts_page",
            {
                "after": after or "",
                "cluster": flt.cluster or "",
                "rack": flt.rack or "",
                "scalable_unit": flt.scalable_unit or "",
                "model": (flt.model or "").lower(),
                "min_free": flt.min_free_gpus,
                "stale_before": now - self.stale_after_s if flt.stale_only else 0.0,
                "first": n + 1,
            },
        )
        nodes = [
            HostSummary(
                name=r["name"],
                cluster=r["cluster"],
                rack=r["rack"],
                scalable_unit=r["scalable_unit"],
                gpu_model=r["gpu_model"],
                gpu_count=r["gpu_count"],
                free_gpus=r["free_gpus"],
                age_seconds=age_seconds(r["received_at"], now),
                stale=is_stale(r["received_at"], now, self.stale_after_s),
            )
            for r in rows[:n]
        ]
        return HostConnection(
            nodes=nodes,
            page_info=PageInfo(has_next_page=more_after(nodes, rows), end_cursor=nodes[-1].name if nodes else None),
        )

    async def gpus_page(self, flt: GPUFilter, first: int, after: str | None) -> GpuPage:
        n = page_size(first)
        rows = await self.gw.read(
            "gpus_page",
            {
                "after": after or "",
                "model": (flt.model or "").lower(),
                "state": flt.state or "",
                "health": flt.health or "",
                "host": flt.host or "",
                "min_memory_mib": int(min(max(flt.min_memory_gib or 0.0, 0.0), 16 * 1024 * 1024) * 1024),
                "first": n + 1,
            },
        )
        nodes = [LocatedGpu(gpu_from_row(r), r["host"], r["rack"], r["scalable_unit"]) for r in rows[:n]]
        return GpuPage(
            nodes, PageInfo(has_next_page=more_after(nodes, rows), end_cursor=nodes[-1].gpu.uuid if nodes else None)
        )

    async def gpus_by_uuid(self, uuids: list[str]) -> list[LocatedGpu]:
        """These GPUs with their hosts (those the graph knows), by host and index."""
        rows = await self.gw.read("gpus_by_uuid", {"uuids": uuids})
        return [LocatedGpu(gpu_from_row(r), r["host"], None, None) for r in rows]

    async def fabric(self, cluster: str, tier: str | None, first: int, after: str | None) -> Fabric:
        n = page_size(first)
        rows = await self.gw.read(
            "fabric_switches", {"cluster": cluster, "tier": tier or "", "after": after or "", "first": n + 1}
        )
        switches = [
            Switch(
                name=r["name"],
                tier=r["tier"],
                scalable_unit=r["scalable_unit"],
                rail=r["rail"],
                model=r["model"],
                free_gpus=r["free_gpus"],
                nics=int(r["nics"]),
                uplinks=[
                    SwitchLink(to=u["to"], links=u["links"], bandwidth_gbps=u["bandwidth_gbps"])
                    for u in r["uplinks"]
                    if u
                ],
            )
            for r in rows[:n]
        ]
        return Fabric(
            switches=switches,
            page_info=PageInfo(
                has_next_page=more_after(switches, rows), end_cursor=switches[-1].name if switches else None
            ),
        )

    async def fabric_path(self, a: str, b: str) -> FabricPath | None:
        rows = {r["host"]: r for r in await self.gw.read("host_fabric_position", {"hosts": [a, b]})}
        if a not in rows or b not in rows:
            return None
        return path_between(a, b, rows[a], rows[b])


def path_between(a: str, b: str, row_a: dict[str, Any], row_b: dict[str, Any]) -> FabricPath:
    """Pure: switch hops and the slowest link between two hosts from their fabric positions."""

    def as_host(r: dict[str, Any]) -> PlacementHost:
        return PlacementHost(
            r["host"],
            None,
            None,
            list(r["leaves"] or []),
            r["pod"],
            None,
            [],
            cluster=r.get("cluster"),
            spines=frozenset(r.get("spines") or ()),
            cores=frozenset(r.get("cores") or ()),
        )

    h = hops(as_host(row_a), as_host(row_b))
    nics = [nic for r in (row_a, row_b) for nic in r["nics"]]
    nic_gbps = [(nic["rate_gbps"] or 0) / 8 for nic in nics if nic.get("rate_gbps") and nic.get("leaf")]
    bottleneck: float | None = min(nic_gbps) if nic_gbps else None
    if h is not None and h > 1:
        uplinks = [nic["leaf_uplink_gbps"] for nic in nics if nic.get("leaf_uplink_gbps")]
        if uplinks and bottleneck is not None:
            bottleneck = min(bottleneck, min(uplinks))
    if h == 0 or h is None:
        bottleneck = None  # one host; or no path known (two clusters' fabrics, or an uncabled host)
    return FabricPath(from_host=a, to_host=b, hops=h, bottleneck_gbps=bottleneck)
