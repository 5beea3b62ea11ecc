"""Browsing resolvers: cluster summary, hosts, GPUs, one host in detail, the fabric, host-to-host paths."""

from __future__ import annotations

import time
from typing import Any

from graphsvc.api.graphql.inputs import GPUFilter, HostFilter
from graphsvc.api.graphql.types import (
    GPU,
    NIC,
    ClusterSummary,
    DomainCount,
    Fabric,
    FabricPath,
    GPUConnection,
    GPUPlacement,
    Host,
    HostConnection,
    HostRef,
    HostSummary,
    ModelCount,
    NUMANode,
    NVLinkMatrix,
    PageInfo,
    PCIeSwitch,
    Switch,
    SwitchLink,
)
from graphsvc.placement.model import Host as PlacementHost
from graphsvc.placement.model import hops
from graphsvc.store.gateway import Gateway
from graphsvc.topology import pcie_class

MAX_PAGE = 500


def _page(first: int) -> int:
    return max(1, min(first, MAX_PAGE))


def gpu_from_row(row: dict[str, Any], host: str, rack: str | None = None, su: str | None = None) -> GPU:
    return GPU(
        uuid=row["uuid"],
        index=int(row["index"]),
        model=row.get("model") or "",
        memory_mib=row.get("memory_mib"),
        state=row.get("state"),
        health=row.get("health"),
        temperature_c=row.get("temperature_c"),
        utilization_pct=row.get("utilization_pct"),
        numa_node=row.get("numa_node"),
        pci_bus_id=row.get("pci_bus_id"),
        nvlink_domain=row.get("nvlink_domain") or row.get("domain"),
        host=HostRef(name=host, rack=rack, scalable_unit=su),
    )


async def cluster_summary(gw: Gateway, stale_after_s: float) -> ClusterSummary:
    rows = await gw.read("cluster_summary")
    domains = await gw.read("domain_summary")
    counts = (await gw.read("health_counts"))[0]
    stale = (await gw.read("stale_hosts_count", {"cutoff": time.time() - stale_after_s}))[0]["stale"]
    return ClusterSummary(
        hosts=int(counts["hosts"]),
        gpus=sum(int(r["gpus"]) for r in rows),
        free_gpus=sum(int(r["gpus"]) for r in rows if r["state"] == "free"),
        stale_hosts=int(stale),
        gpus_by_model=[
            ModelCount(model=r["model"], state=r["state"], health=r["health"], gpus=r["gpus"]) for r in rows
        ],
        nvlink_domains=[
            DomainCount(kind=r["kind"], size=r["size"], domains=int(r["domains"]), free_gpus=int(r["free_gpus"] or 0))
            for r in domains
        ],
    )


async def hosts_page(
    gw: Gateway, flt: HostFilter | None, first: int, after: str | None, stale_after_s: float
) -> HostConnection:
    flt = flt or HostFilter()
    n = _page(first)
    now = time.time()
    rows = await gw.read(
        "hosts_page",
        {
            "after": after or "",
            "cluster": flt.cluster or "",
            "rack": flt.rack or "",
            "scalable_unit": flt.scalable_unit or "",
            "model": (flt.model or "").lower(),
            "min_free": flt.min_free_gpus,
            "stale_before": now - stale_after_s if flt.stale_only else 0.0,
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
            age_seconds=round(now - r["received_at"], 3) if r["received_at"] else None,
            stale=bool(r["received_at"] and now - r["received_at"] > stale_after_s),
        )
        for r in rows[:n]
    ]
    return HostConnection(
        nodes=nodes, page_info=PageInfo(has_next_page=len(rows) > n, end_cursor=nodes[-1].name if nodes else None)
    )


async def gpus_page(gw: Gateway, flt: GPUFilter | None, first: int, after: str | None) -> GPUConnection:
    flt = flt or GPUFilter()
    n = _page(first)
    rows = await gw.read(
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
    nodes = [gpu_from_row(r, r["host"], r["rack"], r["scalable_unit"]) for r in rows[:n]]
    return GPUConnection(
        nodes=nodes, page_info=PageInfo(has_next_page=len(rows) > n, end_cursor=nodes[-1].uuid if nodes else None)
    )


async def host_detail(gw: Gateway, name: str, stale_after_s: float) -> Host | None:
    rows = await gw.read("host_detail", {"name": name})
    if not rows:
        return None
    row = rows[0]
    edges = await gw.read("host_nvlink_edges", {"name": name})
    layout = (await gw.read("host_layout", {"name": name}))[0]
    nics_by_gpu = await gw.read("host_gpu_nics", {"host": name})
    now = time.time()
    gpus = [gpu_from_row(g, name, row["rack"], row["scalable_unit"]) for g in row["gpus"]]
    attach = {a["device"]: a["switch"] for a in layout["attachments"] if a.get("device")}
    parent = {s["bus_id"]: s["parent"] for s in layout["switches"] if s.get("bus_id")}
    switch_lanes: dict[int, int] = {}
    direct: dict[tuple[int, int], int] = {}
    index_of = {g.uuid: g.index for g in gpus}
    for e in edges:
        if e["peer_kind"] == "GPU" and e["peer"] in index_of:
            ia, ib = int(e["gpu"]), index_of[e["peer"]]
            direct[(ia, ib)] = direct[(ib, ia)] = int(e["links"] or 0)
        else:
            switch_lanes[int(e["gpu"])] = switch_lanes.get(int(e["gpu"]), 0) + int(e["links"] or 0)
    domain_of = {g.index: g.nvlink_domain for g in gpus}
    matrix: list[list[str]] = []
    for a in gpus:
        cells = []
        for b in gpus:
            if a.index == b.index:
                cells.append("X")
            elif (a.index, b.index) in direct:
                cells.append(f"NV{direct[(a.index, b.index)]}")
            elif switch_lanes.get(a.index) and domain_of[a.index] and domain_of[a.index] == domain_of[b.index]:
                cells.append(f"NV{min(switch_lanes[a.index], switch_lanes.get(b.index, 0))}")
            else:
                cells.append(pcie_class(attach.get(a.uuid), attach.get(b.uuid), a.numa_node, b.numa_node, parent))
        matrix.append(cells)
    serves: dict[str, list[int]] = {}
    for r in nics_by_gpu:
        serves.setdefault(r["nic"], []).append(int(r["gpu"]))
    received = row["received_at"]
    return Host(
        name=row["name"],
        cluster=row["cluster"],
        rack=row["rack"],
        scalable_unit=row["scalable_unit"],
        cpu_model=row["cpu_model"],
        collected_at=row["collected_at"],
        received_at=received,
        age_seconds=round(now - received, 3) if received else None,
        stale=bool(received and now - received > stale_after_s),
        gpus=gpus,
        nvlink_matrix=NVLinkMatrix(gpu_indices=[g.index for g in gpus], rows=matrix),
        placement=[
            GPUPlacement(
                index=g.index,
                uuid=g.uuid,
                numa_node=g.numa_node,
                pcie_switch=attach.get(g.uuid),
                nvswitch_lanes=switch_lanes.get(g.index, 0),
            )
            for g in gpus
        ],
        numa_nodes=[
            NUMANode(index=n["index"], cpus=n["cpus"], memory_mib=n["memory_mib"])
            for n in layout["numa"]
            if n.get("index") is not None
        ],
        pcie_switches=[
            PCIeSwitch(
                bus_id=s["bus_id"],
                parent=s["parent"],
                generation=s["generation"],
                width=s["width"],
                numa_node=s["numa_node"],
            )
            for s in layout["switches"]
            if s.get("bus_id")
        ],
        nics=[
            NIC(
                name=n["name"],
                rate_gbps=n["rate_gbps"],
                state=n["state"],
                rail=n["rail"],
                numa_node=n["numa_node"],
                guid=n["guid"],
                leaf=n["leaf"],
                pcie_switch=attach.get(n["name"]),
                serves_gpus=sorted(serves.get(n["name"], [])),
            )
            for n in row["nics"]
        ],
    )


async def fabric(gw: Gateway, cluster: str, tier: str | None, first: int, after: str | None) -> Fabric:
    n = _page(first)
    rows = await gw.read(
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
                SwitchLink(to=u["to"], links=u["links"], bandwidth_gbps=u["bandwidth_gbps"]) for u in r["uplinks"]
            ],
        )
        for r in rows[:n]
    ]
    return Fabric(
        switches=switches,
        page_info=PageInfo(has_next_page=len(rows) > n, end_cursor=switches[-1].name if switches else None),
    )


async def fabric_path(gw: Gateway, a: str, b: str) -> FabricPath | None:
    rows = {r["host"]: r for r in await gw.read("host_fabric_position", {"hosts": [a, b]})}
    if a not in rows or b not in rows:
        return None

    def as_host(r: dict[str, Any]) -> PlacementHost:
        return PlacementHost(r["host"], None, None, list(r["leaves"] or []), r["pod"], None, [])

    ha, hb = as_host(rows[a]), as_host(rows[b])
    h = hops(ha, hb)
    nic_gbps = [
        (nic["rate_gbps"] or 0) / 8
        for r in (rows[a], rows[b])
        for nic in r["nics"]
        if nic.get("rate_gbps") and nic.get("leaf")
    ]
    bottleneck: float | None = min(nic_gbps) if nic_gbps else None
    if h is not None and h > 1:
        uplinks = [
            nic["leaf_uplink_gbps"] for r in (rows[a], rows[b]) for nic in r["nics"] if nic.get("leaf_uplink_gbps")
        ]
        if uplinks and bottleneck is not None:
            bottleneck = min(bottleneck, min(uplinks))
    if h == 0:
        bottleneck = None
    return FabricPath(from_host=a, to_host=b, hops=h, bottleneck_gbps=bottleneck)
