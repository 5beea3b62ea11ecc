"""GraphQL object types: what schedulers and operators read.

Where the read model's value is exactly what the schema shows, it is wrapped as it is
(`wrap`): one class, one name, from `graphsvc.read` to the schema. The types here are the
ones that add something for GraphQL: `GPU` (deprecated aliases, a derived vendor), `Host`
(resolved lazily, part by part, through the request's dataloaders), placement answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import strawberry
from strawberry.scalars import JSON
from topo_facts.gpu_models import vendor_of

from graphsvc.api.graphql.context import Info
from graphsvc.api.graphql.mig import MigSlice, MigSliceCandidate
from graphsvc.api.graphql.mig import of_host as mig_slice_of_host
from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.request import NVLinkRequirement, Packing
from graphsvc.placement.statement import Statement
from graphsvc.read import browse, hosts
from graphsvc.read.browse import (
    ClusterCount,
    ClusterSummary,
    DomainCount,
    Fabric,
    FabricPath,
    HostConnection,
    HostSummary,
    ModelCount,
    PageInfo,
    Switch,
    SwitchLink,
)
from graphsvc.read.hosts import HostHeader, NumaNode, PcieSwitch, TopologyGpu

__all__ = [
    "GPU",
    "NIC",
    "ClusterCount",
    "ClusterSummary",
    "DomainCount",
    "Fabric",
    "FabricPath",
    "Fragmentation",
    "GPUConnection",
    "GPUPlacement",
    "Host",
    "HostConnection",
    "HostRef",
    "HostSummary",
    "InfeasibleReason",
    "ModelCount",
    "NVLinkMatrix",
    "NVLinkRequirement",
    "Packing",
    "PageInfo",
    "PlacementCandidate",
    "PlacementResult",
    "Switch",
    "SwitchLink",
]


def wrap(
    cls: type[Any],
    *,
    name: str | None = None,
    description: str | None = None,
    make: Callable[..., Any] = strawberry.type,
    fields: Mapping[str, str] | None = None,
) -> None:
    """Expose a read model's dataclass as a GraphQL type (or, with make=strawberry.input, an
    input) as it is. `fields` gives a field a description, or "=graphqlName: description"."""
    make(cls, name=name, description=description)
    fields = fields or {}
    for f in cls.__strawberry_definition__.fields:
        if f.python_name in fields:
            text = fields[f.python_name]
            if text.startswith("=") and ":" in text:
                graphql_name, _, text = text[1:].partition(":")
                f.graphql_name = graphql_name.strip()
            f.description = text.strip() or None


strawberry.enum(
    NVLinkRequirement,
    name="NVLinkMode",
    description="How much scale-up link the chosen accelerators must share: NVLink, or xGMI on AMD (any vendor).",
)
strawberry.enum(Packing, description="Soft packing preference.")

wrap(InfeasibleReason, fields={"nearest_feasible": "The nearest request that fits, in text form"})
wrap(browse.PageInfo)
wrap(browse.HostSummary, fields={"age_seconds": "Seconds since the host's facts arrived."})
wrap(browse.HostConnection)
wrap(browse.ModelCount)
wrap(browse.DomainCount)
wrap(browse.ClusterCount)
wrap(browse.ClusterSummary)
wrap(browse.SwitchLink, fields={"bandwidth_gbps": "GB/s over all cables"})
wrap(browse.Switch)
wrap(browse.Fabric)
wrap(
    browse.FabricPath,
    description="How two hosts reach each other over the fabric.",
    fields={
        "hops": "Switches crossed: 1 same leaf, 3 via a spine, 5 via the core",
        "bottleneck_gbps": "GB/s of the slowest link on the way",
    },
)
wrap(hosts.NumaNode, name="NUMANode", fields={"memory_mib": "=memoryMiB:"})
wrap(hosts.PcieSwitch, name="PCIeSwitch")


@strawberry.type(description="Where a GPU or candidate lives.")
class HostRef:
    name: str
    rack: str | None = None
    scalable_unit: str | None = None


@strawberry.type(description="An accelerator (NVIDIA or AMD GPU); the type keeps its name for existing clients.")
class GPU:
    uuid: str
    index: int
    model: str
    memory_mib: int | None = strawberry.field(name="memoryMiB", default=None)
    state: str | None = None
    health: str | None = None
    temperature_c: float | None = strawberry.field(name="temperatureC", default=None)
    utilization_pct: float | None = None
    numa_node: int | None = None
    pci_bus_id: str | None = None
    nvlink_domain: str | None = strawberry.field(
        default=None, deprecation_reason="Use scaleUpDomain: the same value, named for any vendor (NVLink or xGMI)"
    )
    host: HostRef

    @strawberry.field(description="The scale-up domain (NVLink island, NVL72 clique or AMD xGMI hive) it is in")
    def scale_up_domain(self) -> str | None:
        return self.nvlink_domain

    @strawberry.field(description="nvidia or amd, from the model name; null when the name does not say")
    def vendor(self) -> str | None:
        return vendor_of(self.model)

    @staticmethod
    def of(g: TopologyGpu, host: HostRef) -> GPU:
        return GPU(
            uuid=g.uuid,
            index=g.index,
            model=g.model,
            memory_mib=g.memory_mib,
            state=g.state.value if g.state else None,
            health=g.health,
            temperature_c=g.temperature_c,
            utilization_pct=g.utilization_pct,
            numa_node=g.numa_node,
            pci_bus_id=g.pci_bus_id,
            nvlink_domain=g.nvlink_domain,
            host=host,
        )


@strawberry.type
class GPUConnection:
    nodes: list[GPU]
    page_info: PageInfo

    @staticmethod
    def of(page: browse.GpuPage) -> GPUConnection:
        refs: dict[str, HostRef] = {}
        nodes = [
            GPU.of(n.gpu, refs.setdefault(n.host, HostRef(name=n.host, rack=n.rack, scalable_unit=n.scalable_unit)))
            for n in page.nodes
        ]
        return GPUConnection(nodes=nodes, page_info=page.page_info)


@strawberry.type
class NIC:
    name: str
    rate_gbps: float | None = strawberry.field(description="Gb/s")
    state: str | None
    rail: int | None
    numa_node: int | None
    guid: str | None
    leaf: str | None
    pcie_switch: str | None
    serves_gpus: list[int] = strawberry.field(description="Indices of GPUs whose nearest NIC this is")


@strawberry.type(description="Like `nvidia-smi topo -m`: NV<k> lanes, or PCIe, between GPU pairs.")
class NVLinkMatrix:
    gpu_indices: list[int]
    rows: list[list[str]]


@strawberry.type
class GPUPlacement:
    index: int
    uuid: str
    numa_node: int | None
    pcie_switch: str | None
    nvswitch_lanes: int


@strawberry.type(description="One host; its PCIe tree, NVLink edges and NIC affinity are read only when asked for.")
class Host:
    name: str
    cluster: str | None
    rack: str | None
    scalable_unit: str | None
    cpu_model: str | None
    collected_at: float | None
    received_at: float | None
    age_seconds: float | None
    stale: bool
    gpus: list[GPU]
    header: strawberry.Private[HostHeader]

    @staticmethod
    def of(h: HostHeader, now: float, stale_after_s: float) -> Host:
        ref = HostRef(name=h.name, rack=h.rack, scalable_unit=h.scalable_unit)
        return Host(
            name=h.name,
            cluster=h.cluster,
            rack=h.rack,
            scalable_unit=h.scalable_unit,
            cpu_model=h.cpu_model,
            collected_at=h.collected_at,
            received_at=h.received_at,
            age_seconds=browse.age_seconds(h.received_at, now),
            stale=browse.is_stale(h.received_at, now, stale_after_s),
            gpus=[GPU.of(g, ref) for g in h.gpus],
            header=h,
        )

    @strawberry.field
    async def nvlink_matrix(self, info: Info) -> NVLinkMatrix:
        loaders = info.context.loaders
        layout, edges = await loaders.layout.load(self.name), await loaders.nvlinks.load(self.name)
        return NVLinkMatrix(
            gpu_indices=[g.index for g in self.header.gpus], rows=hosts.topo_matrix(self.header.gpus, edges, layout)
        )

    @strawberry.field(description="PCIe and NUMA placement of each GPU")
    async def placement(self, info: Info) -> list[GPUPlacement]:
        loaders = info.context.loaders
        layout, edges = await loaders.layout.load(self.name), await loaders.nvlinks.load(self.name)
        lanes = hosts.switch_lanes(edges)
        return [
            GPUPlacement(
                index=g.index,
                uuid=g.uuid,
                numa_node=g.numa_node,
                pcie_switch=layout.attachments.get(g.uuid),
                nvswitch_lanes=lanes.get(g.index, 0),
            )
            for g in self.header.gpus
        ]

    @strawberry.field(description="The MIG slices of its MIG-enabled GPUs, free or held")
    async def mig_slices(self, info: Info) -> list[MigSlice]:
        return [mig_slice_of_host(s, self.name) for s in await info.context.loaders.mig_slices.load(self.name)]

    @strawberry.field
    async def numa_nodes(self, info: Info) -> list[NumaNode]:
        return (await info.context.loaders.layout.load(self.name)).numa

    @strawberry.field
    async def pcie_switches(self, info: Info) -> list[PcieSwitch]:
        return (await info.context.loaders.layout.load(self.name)).pcie_switches

    @strawberry.field
    async def nics(self, info: Info) -> list[NIC]:
        loaders = info.context.loaders
        layout, affinity = await loaders.layout.load(self.name), await loaders.affinity.load(self.name)
        serves = hosts.gpus_served(affinity)
        return [
            NIC(
                name=n.name,
                rate_gbps=n.rate_gbps,
                state=n.state,
                rail=n.rail,
                numa_node=n.numa_node,
                guid=n.guid,
                leaf=n.leaf,
                pcie_switch=layout.attachments.get(n.name),
                serves_gpus=serves.get(n.name, []),
            )
            for n in self.header.nics
        ]


@strawberry.type(description="Contiguous free capacity (largest free block) before and after taking the GPUs.")
class Fragmentation:
    largest_free_block_before: int
    largest_free_block_after: int


@strawberry.type
class PlacementCandidate:
    rank: int
    gpus: list[GPU]
    hosts: list[HostRef]
    score: float
    bottleneck_gbps: float | None
    max_ib_hops: int
    ib_hops_known: bool = strawberry.field(
        description="False when two of its hosts have no InfiniBand path the graph knows (a host no "
        "fabric cables, two clusters, or switches no higher switch joins): maxIbHops then counts only "
        "the pairs that have one. Only a request without a hop limit is placed so."
    )
    rank_order: list[str] = strawberry.field(description="GPU uuids in collective rank order")
    fragmentation: Fragmentation
    reason: str
    as_of: float = strawberry.field(description="Age in seconds of the oldest host facts this relied on")


@strawberry.type(description="A Cypher statement placement ran to find its candidates, with its parameters")
class CypherStatement:
    name: str = strawberry.field(description="The named query, queries/NAME.cypher")
    statement: str = strawberry.field(description="Its text, fragments expanded")
    parameters: JSON = strawberry.field(description="The values it ran with")
    # Rendered only when a query selects `browser`: every placement answer carries its statements,
    # and rendering each one's parameters as Cypher cost ~0.2 ms of a multi-host answer that no
    # scheduler reads (docs/benchmarks.md, Placement latency, "Stop 57, second step").
    source: strawberry.Private[Statement]

    @strawberry.field(
        description="One paste for Neo4j Browser: a :params command with these values, then the statement"
    )
    def browser(self) -> str:
        return self.source.browser


@strawberry.type(description="How the candidates were found: the store's part, runnable as it ran")
class PlacementExplain:
    cypher: list[CypherStatement] = strawberry.field(
        description="The candidate statements, in the order run (one for single-host and single-domain requests)"
    )


@strawberry.type
class PlacementResult:
    request: str = strawberry.field(description="The request in canonical text form")
    candidates: list[PlacementCandidate]
    infeasible: list[InfeasibleReason]
    searched_units: int
    elapsed_ms: float
    explain: PlacementExplain = strawberry.field(
        default_factory=lambda: PlacementExplain(cypher=[]),
        description="The Cypher that found the candidates (docs/placement.md: where each constraint is evaluated)",
    )
    mig_candidates: list[MigSliceCandidate] = strawberry.field(
        default_factory=list, description="For a MIG request (2x 3g.40gb): where the slices could be taken"
    )
