"""The host topology read model: the one place a host is assembled from the graph.

GraphQL's `host`, the REST host view, the NCCL XML, Slurm's gres.conf and NodeName lines and
the DRA ResourceSlices all read hosts through `HostReader`, which asks for any number of hosts
at once (four named queries for a whole cluster, not four per host) and builds `HostTopology`
values. Derived views (the NVLink lanes between GPU pairs, the `nvidia-smi topo -m` matrix, the
NIC serving each GPU) are computed here once, as pure functions over those values.

The four parts are separate reads so a GraphQL request that asks only for a host's name and
GPUs does not pay for its PCIe tree (`graphsvc.api.graphql.loaders` batches each part per
request with a dataloader).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphsvc.states import GpuState
from graphsvc.store.gateway import Gateway
from graphsvc.topology import pcie_class


@dataclass(frozen=True)
class TopologyGpu:
    uuid: str
    index: int
    model: str
    memory_mib: int | None = None
    state: GpuState | None = None
    health: str | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None
    numa_node: int | None = None
    pci_bus_id: str | None = None
    nvlink_domain: str | None = None
    compute_capability: str | None = None


@dataclass(frozen=True)
class TopologyNic:
    name: str
    rate_gbps: float | None = None
    state: str | None = None
    rail: int | None = None
    numa_node: int | None = None
    guid: str | None = None
    leaf: str | None = None
    pci_bus_id: str | None = None
    link_layer: str | None = None
    netdev: str | None = None


@dataclass(frozen=True)
class NumaNode:
    index: int
    cpus: str | None
    memory_mib: int | None


@dataclass(frozen=True)
class PcieSwitch:
    bus_id: str
    parent: str | None
    generation: int | None
    width: int | None
    numa_node: int | None


@dataclass(frozen=True)
class HostLayout:
    """A host's NUMA nodes, PCIe switch tree, and the switch each device (GPU uuid, NIC name) hangs off."""

    numa: list[NumaNode] = field(default_factory=list)
    pcie_switches: list[PcieSwitch] = field(default_factory=list)
    attachments: dict[str, str] = field(default_factory=dict)

    @property
    def parent(self) -> dict[str, str | None]:
        return {s.bus_id: s.parent for s in self.pcie_switches}


@dataclass(frozen=True)
class NVLinkEdge:
    """One NVLink edge from a GPU (by index and uuid) to a peer GPU or NVSwitch (by uuid)."""

    gpu: int
    uuid: str
    peer: str
    peer_kind: str  # GPU | NVSwitch
    links: int


@dataclass(frozen=True)
class NicAffinity:
    """The NIC nearest a GPU, and how near (pcie-switch, numa, host)."""

    gpu: int
    nic: str
    rail: int | None
    via: str | None


@dataclass(frozen=True)
class HostSlice:
    """A MIG slice of one of a host's GPUs, free or held (one row of `host_mig_slices`)."""

    gpu: str
    gpu_index: int
    gpu_model: str
    uuid: str
    profile: str
    gpu_instance_id: int | None
    memory_mib: int | None
    state: str
    reservation: str | None


@dataclass(frozen=True)
class HostHeader:
    """A host's own properties and its devices (one row of `host_detail`)."""

    name: str
    cluster: str | None
    rack: str | None
    scalable_unit: str | None
    cpu_model: str | None
    collected_at: float | None
    received_at: float | None
    collector_version: str | None
    gpus: list[TopologyGpu]
    nics: list[TopologyNic]


@dataclass(frozen=True)
class HostTopology:
    """Everything the graph knows about one host's insides."""

    header: HostHeader
    layout: HostLayout
    nvlinks: list[NVLinkEdge]
    affinity: list[NicAffinity]

    @property
    def name(self) -> str:
        return self.header.name

    @property
    def gpus(self) -> list[TopologyGpu]:
        return self.header.gpus

    @property
    def nics(self) -> list[TopologyNic]:
        return self.header.nics


# -- pure derivations (table-tested in tests/unit/test_read_hosts.py) --------------------------


def switch_lanes(edges: Iterable[NVLinkEdge]) -> dict[int, int]:
    """NVLink lanes from each GPU (by index) to NVSwitches, summed over its switches."""
    out: dict[int, int] = {}
    for e in edges:
        if e.peer_kind != "GPU":
            out[e.gpu] = out.get(e.gpu, 0) + e.links
    return out


def nvlink_lanes(gpus: list[TopologyGpu], edges: list[NVLinkEdge]) -> dict[tuple[int, int], int]:
    """Lanes between GPU pairs (both directions): direct links, or through NVSwitches of one
    NVLink domain (the fewer of the two GPUs' switch lanes). Pairs without NVLink are absent."""
    index_of = {g.uuid: g.index for g in gpus}
    domain = {g.index: g.nvlink_domain for g in gpus}
    out: dict[tuple[int, int], int] = {}
    for e in edges:
        if e.peer_kind == "GPU" and e.peer in index_of:
            b = index_of[e.peer]
            out[(e.gpu, b)] = out[(b, e.gpu)] = e.links
    lanes = switch_lanes(edges)
    for a, la in lanes.items():
        for b, lb in lanes.items():
            if a != b and domain.get(a) is not None and domain.get(a) == domain.get(b) and (a, b) not in out:
                out[(a, b)] = min(la, lb)
    return out


def topo_matrix(gpus: list[TopologyGpu], edges: list[NVLinkEdge], layout: HostLayout) -> list[list[str]]:
    """`nvidia-smi topo -m` between GPU pairs: X, NV<lanes>, or the PCIe class (PIX ... SYS)."""
    lanes = nvlink_lanes(gpus, edges)
    parent = layout.parent
    rows: list[list[str]] = []
    for a in gpus:
        cells = []
        for b in gpus:
            if a.index == b.index:
                cells.append("X")
            elif (a.index, b.index) in lanes:
                cells.append(f"NV{lanes[(a.index, b.index)]}")
            else:
                cells.append(
                    pcie_class(
                        layout.attachments.get(a.uuid),
                        layout.attachments.get(b.uuid),
                        a.numa_node,
                        b.numa_node,
                        parent,
                    )
                )
        rows.append(cells)
    return rows


def gpus_served(affinity: Iterable[NicAffinity]) -> dict[str, list[int]]:
    """NIC name -> indices of the GPUs whose nearest NIC it is."""
    out: dict[str, list[int]] = defaultdict(list)
    for a in affinity:
        out[a.nic].append(a.gpu)
    return {nic: sorted(gpus) for nic, gpus in out.items()}


def root_switch(layout: HostLayout, device: str) -> str | None:
    """The topmost PCIe switch above a device (GPU uuid or NIC name), or None if it hangs off none."""
    parent = layout.parent
    bus = layout.attachments.get(device)
    seen: set[str] = set()
    while bus is not None and parent.get(bus) in parent and bus not in seen:
        seen.add(bus)
        bus = parent[bus]
    return bus


# -- rows -> values ----------------------------------------------------------------------------


def gpu_from_row(g: dict[str, Any]) -> TopologyGpu:
    return TopologyGpu(
        uuid=str(g["uuid"]),
        index=int(g["index"]),
        model=str(g.get("model") or ""),
        memory_mib=g.get("memory_mib"),
        state=GpuState.parse(g.get("state")),
        health=g.get("health"),
        temperature_c=g.get("temperature_c"),
        utilization_pct=g.get("utilization_pct"),
        numa_node=g.get("numa_node"),
        pci_bus_id=g.get("pci_bus_id"),
        nvlink_domain=g.get("nvlink_domain"),
        compute_capability=g.get("compute_capability"),
    )


def _nic(n: dict[str, Any]) -> TopologyNic:
    return TopologyNic(
        name=str(n["name"]),
        rate_gbps=n.get("rate_gbps"),
        state=n.get("state"),
        rail=n.get("rail"),
        numa_node=n.get("numa_node"),
        guid=n.get("guid"),
        leaf=n.get("leaf"),
        pci_bus_id=n.get("pci_bus_id"),
        link_layer=n.get("link_layer"),
        netdev=n.get("netdev"),
    )


def _header(row: dict[str, Any]) -> HostHeader:
    return HostHeader(
        name=row["name"],
        cluster=row["cluster"],
        rack=row["rack"],
        scalable_unit=row["scalable_unit"],
        cpu_model=row["cpu_model"],
        collected_at=row["collected_at"],
        received_at=row["received_at"],
        collector_version=row["collector_version"],
        gpus=sorted((gpu_from_row(g) for g in row["gpus"] if g), key=lambda g: g.index),
        nics=sorted((_nic(n) for n in row["nics"] if n), key=lambda n: n.name),
    )


def _layout(row: dict[str, Any]) -> HostLayout:
    return HostLayout(
        numa=sorted(
            (
                NumaNode(int(n["index"]), n.get("cpus"), n.get("memory_mib"))
                for n in row["numa"]
                if n.get("index") is not None
            ),
            key=lambda n: n.index,
        ),
        pcie_switches=sorted(
            (
                PcieSwitch(s["bus_id"], s.get("parent"), s.get("generation"), s.get("width"), s.get("numa_node"))
                for s in row["switches"]
                if s.get("bus_id")
            ),
            key=lambda s: s.bus_id,
        ),
        attachments={a["device"]: a["switch"] for a in row["attachments"] if a.get("device") and a.get("switch")},
    )


class HostReader:
    """Reads hosts by name, any number at once; each method is one named query."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway

    async def headers(self, names: list[str]) -> dict[str, HostHeader]:
        rows = await self.gw.read("host_detail", {"hosts": _unique(names)})
        return {r["name"]: _header(r) for r in rows}

    async def layouts(self, names: list[str]) -> dict[str, HostLayout]:
        rows = await self.gw.read("host_layout", {"hosts": _unique(names)})
        found = {r["host"]: _layout(r) for r in rows}
        return {n: found.get(n, HostLayout()) for n in names}

    async def nvlinks(self, names: list[str]) -> dict[str, list[NVLinkEdge]]:
        out: dict[str, list[NVLinkEdge]] = {n: [] for n in names}
        for r in await self.gw.read("host_nvlink_edges", {"hosts": _unique(names)}):
            out.setdefault(r["host"], []).append(
                NVLinkEdge(int(r["gpu"]), str(r["uuid"]), str(r["peer"]), str(r["peer_kind"]), int(r["links"] or 0))
            )
        return out

    async def affinities(self, names: list[str]) -> dict[str, list[NicAffinity]]:
        out: dict[str, list[NicAffinity]] = {n: [] for n in names}
        for r in await self.gw.read("host_gpu_nics", {"hosts": _unique(names)}):
            out.setdefault(r["host"], []).append(NicAffinity(int(r["gpu"]), str(r["nic"]), r["rail"], r["via"]))
        return out

    async def mig_slices(self, names: list[str]) -> dict[str, list[HostSlice]]:
        out: dict[str, list[HostSlice]] = {n: [] for n in names}
        for r in await self.gw.read("host_mig_slices", {"hosts": _unique(names)}):
            out.setdefault(r["host"], []).append(
                HostSlice(
                    gpu=str(r["gpu"]),
                    gpu_index=int(r["gpu_index"]),
                    gpu_model=str(r["gpu_model"]),
                    uuid=str(r["uuid"]),
                    profile=str(r["profile"]),
                    gpu_instance_id=r["gpu_instance_id"],
                    memory_mib=r["memory_mib"],
                    state=str(r["state"]),
                    reservation=r["reservation"],
                )
            )
        return out

    async def hosts(self, names: list[str]) -> dict[str, HostTopology]:
        """Whole hosts, by name; names the graph does not know are absent."""
        headers = await self.headers(names)
        known = list(headers)
        if not known:
            return {}
        layouts = await self.layouts(known)
        nvlinks = await self.nvlinks(known)
        affinity = await self.affinities(known)
        return {n: HostTopology(headers[n], layouts[n], nvlinks[n], affinity[n]) for n in known}

    async def host(self, name: str) -> HostTopology | None:
        return (await self.hosts([name])).get(name)


def _unique(names: Iterable[str]) -> list[str]:
    return sorted(set(names))


def rest_view(h: HostHeader) -> dict[str, Any]:
    """The REST host view (`GET /v1/hosts/{name}`): the host and its devices as plain JSON."""
    return {
        "name": h.name,
        "cluster": h.cluster,
        "rack": h.rack,
        "scalable_unit": h.scalable_unit,
        "collected_at": h.collected_at,
        "received_at": h.received_at,
        "collector_version": h.collector_version,
        "cpu_model": h.cpu_model,
        "gpus": [{**g.__dict__, "state": g.state.value if g.state else None} for g in h.gpus],
        "nics": [dict(n.__dict__) for n in h.nics],
    }
