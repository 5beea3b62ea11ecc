"""GraphQL object types: what schedulers and operators read."""

from __future__ import annotations

from enum import Enum

import strawberry
from topo_facts.gpu_models import vendor_of


@strawberry.enum(
    description="How much scale-up link the chosen accelerators must share: NVLink, or xGMI on AMD (any vendor)."
)
class NVLinkMode(Enum):
    NONE = "none"
    ANY = "any"
    FULL_MESH = "full-mesh"


@strawberry.enum(description="Soft packing preference.")
class Packing(Enum):
    BEST_FIT = "best-fit"
    SPREAD = "spread"


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


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class HostSummary:
    name: str
    cluster: str | None
    rack: str | None
    scalable_unit: str | None
    gpu_model: str | None
    gpu_count: int | None
    free_gpus: int | None
    age_seconds: float | None = strawberry.field(description="Seconds since the host's facts arrived.")
    stale: bool


@strawberry.type
class HostConnection:
    nodes: list[HostSummary]
    page_info: PageInfo


@strawberry.type
class GPUConnection:
    nodes: list[GPU]
    page_info: PageInfo


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


@strawberry.type
class NUMANode:
    index: int
    cpus: str | None
    memory_mib: int | None = strawberry.field(name="memoryMiB")


@strawberry.type
class PCIeSwitch:
    bus_id: str
    parent: str | None
    generation: int | None
    width: int | None
    numa_node: int | None


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


@strawberry.type
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
    nvlink_matrix: NVLinkMatrix
    placement: list[GPUPlacement] = strawberry.field(description="PCIe and NUMA placement of each GPU")
    numa_nodes: list[NUMANode]
    pcie_switches: list[PCIeSwitch]
    nics: list[NIC]


@strawberry.type
class ModelCount:
    model: str
    state: str
    health: str
    gpus: int


@strawberry.type
class DomainCount:
    kind: str | None
    size: int | None
    domains: int
    free_gpus: int


@strawberry.type
class ClusterSummary:
    hosts: int
    gpus: int
    free_gpus: int
    stale_hosts: int
    gpus_by_model: list[ModelCount]
    nvlink_domains: list[DomainCount]


@strawberry.type
class SwitchLink:
    to: str
    links: int | None
    bandwidth_gbps: float | None = strawberry.field(description="GB/s over all cables")


@strawberry.type
class Switch:
    name: str
    tier: str
    scalable_unit: str | None
    rail: int | None
    model: str | None
    free_gpus: int | None
    nics: int
    uplinks: list[SwitchLink]


@strawberry.type
class Fabric:
    switches: list[Switch]
    page_info: PageInfo


@strawberry.type(description="How two hosts reach each other over the fabric.")
class FabricPath:
    from_host: str
    to_host: str
    hops: int | None = strawberry.field(description="Switches crossed: 1 same leaf, 3 via a spine, 5 via the core")
    bottleneck_gbps: float | None = strawberry.field(description="GB/s of the slowest link on the way")


@strawberry.type
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
    rank_order: list[str] = strawberry.field(description="GPU uuids in collective rank order")
    fragmentation: Fragmentation
    reason: str
    as_of: float = strawberry.field(description="Age in seconds of the oldest host facts this relied on")


@strawberry.type
class InfeasibleReason:
    constraint: str
    message: str
    nearest_feasible: str | None = strawberry.field(description="The nearest request that fits, in text form")


@strawberry.type
class PlacementResult:
    request: str = strawberry.field(description="The request in canonical text form")
    candidates: list[PlacementCandidate]
    infeasible: list[InfeasibleReason]
    searched_units: int
    elapsed_ms: float
