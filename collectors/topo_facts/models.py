"""The host and fabric fact model, shared by the collectors and the service.

One definition lives here so that what a collector sends and what the service
accepts can never drift apart. Cross-references inside a host (an NVLink peer,
a PCIe switch in a device's path, a NUMA node) are checked here, so a fact set
that names a device it does not contain is rejected before anything is written.
Error messages name the offending field path, e.g. ``gpus[3].nvlinks[0].peer_id``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Self, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from topo_facts.mig import MAX_SLICES_PER_GPU, PROFILE_PATTERN

FACT_FORMAT_VERSION = 1
_T = TypeVar("_T")

MAX_GPUS_PER_HOST = 128
MAX_NICS_PER_HOST = 256
MAX_PCIE_SWITCHES_PER_HOST = 512
MAX_NVSWITCHES_PER_HOST = 64
MAX_NVLINKS_PER_GPU = 72
MAX_NUMA_NODES = 64
MAX_XIDS = 16
MAX_XID_CODE = 1023
MAX_FABRIC_SWITCHES = 100_000
MAX_FABRIC_LINKS = 1_000_000


# What no stored text may hold: control characters (C0, DEL, C1), line and paragraph separators,
# lone surrogates, and the bidirectional controls (U+202E turns the rest of a log line or a table
# cell around). Letters of any script, spaces of any width and the joiners of emoji sequences are
# fine. One rule for the facts a collector sends and for the service's holders, labels and keys.
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _no_control_chars(value: str) -> str:
    """Free text is stored verbatim, but control characters only ever mean trouble in logs.
    A regular expression, not a loop over characters: every text field of every document
    passes here (a loop was ~0.15 ms of a DGX document's validation)."""
    if UNPRINTABLE.search(value):
        raise ValueError("control characters, line breaks and bidi controls are not allowed")
    return value


HostName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="A DNS-style host name: letters, digits, '.', '_' and '-'.",
    ),
]
# Identifiers reported by hardware (GPU uuids, GUIDs, switch names): printable
# ASCII without spaces; stored verbatim, never interpreted.
Ident = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]
MAX_TEXT_LENGTH = 256  # the longest free text a document may carry, and so the longest stored name
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_LENGTH), AfterValidator(_no_control_chars)]
PciBusId = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$",
        description="Full PCI address, domain:bus:device.function, e.g. 0000:1a:00.0",
    ),
    AfterValidator(str.lower),
]


# Hardware error counters (NVML's and an IB port's are 64-bit, since the driver loaded) are kept
# saturated at 2**53 - 1: the largest integer every consumer holds exactly (JSON numbers, and the
# stores' int64 sums of three of them). Taken as sent, a counter above 2**63 failed the Neo4j
# driver (a 500 on ingest) and two near 2**63 overflowed the placement read's sum (a 500 for every
# placement that read the host), while FalkorDB stored them clamped or wrapped and scored a GPU
# with 2**64 errors as one with none (a probe's cases). Saturated, "at least this many" still ranks.
MAX_COUNTER = 2**53 - 1
MAX_MEMORY_MIB = 16 * 1024 * 1024  # 16 TiB: a GPU's memory or a NUMA node's, far beyond any made


def _saturate(value: object) -> object:
    return min(value, MAX_COUNTER) if isinstance(value, int) and not isinstance(value, bool) else value


HardwareCounter = Annotated[int, BeforeValidator(_saturate), Field(ge=0, le=MAX_COUNTER)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILED = "failed"
    UNKNOWN = "unknown"


class PeerType(StrEnum):
    GPU = "gpu"
    NVSWITCH = "nvswitch"


class LinkLayer(StrEnum):
    INFINIBAND = "infiniband"
    ETHERNET = "ethernet"


class PortState(StrEnum):
    ACTIVE = "active"
    DOWN = "down"
    INIT = "init"
    UNKNOWN = "unknown"


class SwitchTier(StrEnum):
    LEAF = "leaf"
    SPINE = "spine"
    CORE = "core"


TIER_ORDER = {SwitchTier.LEAF: 1, SwitchTier.SPINE: 2, SwitchTier.CORE: 3}


class NVLinkFact(_Strict):
    """All NVLink lanes from one GPU to one peer, aggregated: NVML reports per link."""

    peer_type: PeerType
    peer_id: Ident = Field(description="GPU uuid of the peer, or the id of an NVSwitch of this host")
    links: int = Field(ge=1, le=MAX_NVLINKS_PER_GPU)
    bandwidth_gbps: float = Field(ge=0, le=100_000, description="GB/s over all links, bidirectional")
    generation: int | None = Field(default=None, ge=1, le=10)


class NUMANodeFact(_Strict):
    index: int = Field(ge=0, lt=4096)
    cpus: str | None = Field(default=None, max_length=4096, pattern=r"^[0-9,\-]*$")
    memory_mib: int | None = Field(default=None, ge=0, le=MAX_MEMORY_MIB)


class PCIeSwitchFact(_Strict):
    bus_id: PciBusId
    parent: PciBusId | None = Field(default=None, description="Upstream switch; None at the root port")
    generation: int | None = Field(default=None, ge=1, le=7)
    width: int | None = Field(default=None, ge=1, le=32)
    numa_node: int | None = Field(default=None, ge=0, lt=4096)


class NVSwitchFact(_Strict):
    id: Ident = Field(description="Host-local id: PCI bus id on HGX, port id for rack switches")
    pci_bus_id: PciBusId | None = None
    location: str = Field(default="host", pattern=r"^(host|rack)$")


class GPUState(_Strict):
    """Health and load: the part of a GPU's facts that also travels alone, more often."""

    health: Health = Health.UNKNOWN
    health_reasons: list[Text] = Field(default_factory=list, max_length=32)
    ecc_uncorrected: HardwareCounter | None = None
    retired_pages: HardwareCounter | None = None
    temperature_c: float | None = Field(default=None, ge=-50, le=200)
    power_w: float | None = Field(default=None, ge=0, le=10_000)
    utilization_pct: float | None = Field(default=None, ge=0, le=100)
    memory_used_mib: int | None = Field(default=None, ge=0, le=MAX_MEMORY_MIB)
    # NVLink error counters summed over the GPU's links since the driver loaded (NVML
    # nvmlDeviceGetNvLinkErrorCounter): data-link replays, link recoveries, CRC errors (flit + data).
    nvlink_replay_errors: HardwareCounter | None = None
    nvlink_recovery_errors: HardwareCounter | None = None
    nvlink_crc_errors: HardwareCounter | None = None
    # Critical XID codes seen on this GPU since the collector started watching (NVML
    # XidCriticalError events), distinct, oldest first, the last MAX_XIDS kept.
    xid_errors: list[int] = Field(default_factory=list, max_length=MAX_XIDS)

    @field_validator("xid_errors")
    @classmethod
    def _xid_codes(cls, codes: list[int]) -> list[int]:
        if any(not 0 <= c <= MAX_XID_CODE for c in codes):
            raise ValueError(f"XID codes are between 0 and {MAX_XID_CODE}")
        return codes


class MigSliceFact(_Strict):
    """One MIG GPU instance: the unit a MIG-enabled GPU is handed out in (topo_facts.mig names profiles)."""

    uuid: Ident = Field(description="The MIG device uuid (MIG-...), what CUDA_VISIBLE_DEVICES takes")
    gpu_instance_id: int = Field(ge=0, lt=64, description="NVML's GPU instance id on its GPU")
    profile: str = Field(pattern=PROFILE_PATTERN, description="As nvidia-smi names it: 3g.40gb")
    memory_mib: int | None = Field(default=None, ge=0, le=MAX_MEMORY_MIB)


class GPUFact(GPUState):
    uuid: Ident
    index: int = Field(ge=0, lt=MAX_GPUS_PER_HOST)
    model: Text
    memory_mib: int | None = Field(default=None, ge=0, le=MAX_MEMORY_MIB)
    pci_bus_id: PciBusId | None = Field(default=None, description="Unknown in nvidia-smi topo -m imports")
    numa_node: int | None = Field(default=None, ge=0, lt=4096)
    compute_capability: str | None = Field(default=None, pattern=r"^\d{1,2}\.\d{1,2}$")
    mig_mode: bool | None = None
    nvlinks: list[NVLinkFact] = Field(default_factory=list, max_length=MAX_NVLINKS_PER_GPU)
    pcie_path: list[PciBusId] = Field(
        default_factory=list, max_length=16, description="PCIe switches from the GPU up to the root"
    )
    nvlink_domain: Ident | None = Field(
        default=None, description="Fabric clique (clusterUuid/cliqueId) on multi-node NVLink systems"
    )
    mig_slices: list[MigSliceFact] = Field(
        default_factory=list,
        max_length=MAX_SLICES_PER_GPU,
        description="The GPU instances of a MIG-enabled GPU (mig_mode true); empty otherwise",
    )


class NICFact(_Strict):
    name: Ident = Field(description="RDMA device name (mlx5_0) or netdev when there is none")
    netdev: Ident | None = None
    guid: Ident | None = None
    pci_bus_id: PciBusId | None = None
    rate_gbps: float | None = Field(default=None, ge=0, le=100_000, description="Gb/s")
    state: PortState = PortState.UNKNOWN
    link_layer: LinkLayer = LinkLayer.INFINIBAND
    numa_node: int | None = Field(default=None, ge=0, lt=4096)
    rail: int | None = Field(default=None, ge=0, lt=64)
    pcie_path: list[PciBusId] = Field(default_factory=list, max_length=16)
    # InfiniBand port error counters (sysfs ports/N/counters) since the HCA's last reset.
    symbol_errors: HardwareCounter | None = None
    link_downed: HardwareCounter | None = None
    port_rcv_errors: HardwareCounter | None = None


class GPUNICAffinity(_Strict):
    gpu_uuid: Ident
    nic: Ident
    via: str = Field(pattern=r"^(pcie-switch|numa|host)$")


class HostFacts(_Strict):
    """Everything one collector knows about one host at one instant."""

    hostname: HostName
    cluster: HostName = "default"
    rack: HostName | None = None
    scalable_unit: HostName | None = None
    collected_at: datetime
    collector_version: Text
    fact_version: int = Field(default=FACT_FORMAT_VERSION, ge=1, le=FACT_FORMAT_VERSION)
    cpu_model: Text | None = None
    numa_nodes: list[NUMANodeFact] = Field(default_factory=list, max_length=MAX_NUMA_NODES)
    gpus: list[GPUFact] = Field(default_factory=list, max_length=MAX_GPUS_PER_HOST)
    nvswitches: list[NVSwitchFact] = Field(default_factory=list, max_length=MAX_NVSWITCHES_PER_HOST)
    pcie_switches: list[PCIeSwitchFact] = Field(default_factory=list, max_length=MAX_PCIE_SWITCHES_PER_HOST)
    nics: list[NICFact] = Field(default_factory=list, max_length=MAX_NICS_PER_HOST)
    gpu_nic_affinity: list[GPUNICAffinity] = Field(default_factory=list, max_length=4096)

    @model_validator(mode="after")
    def _check_references(self) -> Self:
        if self.collected_at.tzinfo is None:
            raise ValueError("collected_at: must carry a timezone (UTC recommended)")
        problems: list[str] = []
        numa = _unique(problems, "numa_nodes", [n.index for n in self.numa_nodes], "index")
        switches = _unique(problems, "pcie_switches", [s.bus_id for s in self.pcie_switches], "bus_id")
        nvsw = _unique(problems, "nvswitches", [s.id for s in self.nvswitches], "id")
        gpus = _unique(problems, "gpus", [g.uuid for g in self.gpus], "uuid")
        _unique(problems, "gpus", [g.index for g in self.gpus], "index")
        _unique(problems, "gpus", [g.pci_bus_id for g in self.gpus if g.pci_bus_id], "pci_bus_id")
        nics = _unique(problems, "nics", [n.name for n in self.nics], "name")
        _check_mig(problems, self.gpus, gpus)

        for i, s in enumerate(self.pcie_switches):
            if s.parent is not None and s.parent not in switches:
                problems.append(f"pcie_switches[{i}].parent: unknown PCIe switch {s.parent!r}")
            if s.numa_node is not None and numa and s.numa_node not in numa:
                problems.append(f"pcie_switches[{i}].numa_node: unknown NUMA node {s.numa_node}")
        _check_acyclic(problems, self.pcie_switches)
        for i, g in enumerate(self.gpus):
            where = f"gpus[{i}]"
            if g.numa_node is not None and numa and g.numa_node not in numa:
                problems.append(f"{where}.numa_node: unknown NUMA node {g.numa_node}")
            for j, bus in enumerate(g.pcie_path):
                if bus not in switches:
                    problems.append(f"{where}.pcie_path[{j}]: unknown PCIe switch {bus!r}")
            _check_nvlink_peers(problems, where, g.nvlinks)
            for j, link in enumerate(g.nvlinks):
                peers = gpus if link.peer_type is PeerType.GPU else nvsw
                if link.peer_id not in peers:
                    kind = "GPU" if link.peer_type is PeerType.GPU else "NVSwitch"
                    problems.append(f"{where}.nvlinks[{j}].peer_id: unknown {kind} {link.peer_id!r}")
                elif link.peer_type is PeerType.GPU and link.peer_id == g.uuid:
                    problems.append(f"{where}.nvlinks[{j}].peer_id: a GPU cannot link to itself")
        for i, n in enumerate(self.nics):
            if n.numa_node is not None and numa and n.numa_node not in numa:
                problems.append(f"nics[{i}].numa_node: unknown NUMA node {n.numa_node}")
            for j, bus in enumerate(n.pcie_path):
                if bus not in switches:
                    problems.append(f"nics[{i}].pcie_path[{j}]: unknown PCIe switch {bus!r}")
        for i, a in enumerate(self.gpu_nic_affinity):
            if a.gpu_uuid not in gpus:
                problems.append(f"gpu_nic_affinity[{i}].gpu_uuid: unknown GPU {a.gpu_uuid!r}")
            if a.nic not in nics:
                problems.append(f"gpu_nic_affinity[{i}].nic: unknown NIC {a.nic!r}")
        if problems:
            raise ValueError("; ".join(problems[:20]))
        return self


def _check_nvlink_peers(problems: list[str], where: str, nvlinks: list[NVLinkFact]) -> None:
    """One entry per peer, its lanes aggregated (NVLinkFact). A peer named twice was stored as two
    edges with their lanes and bandwidth added up: an NVSwitch named three times gave an H100 54
    lanes and 2,700 GB/s (a probe, stop 73). The lanes are not summed against a bound: `nvidia-smi
    topo -m` on an NVSwitch board reports NV18 to each of 7 peers (the switch's width to each,
    126 in all), which its importer records as such."""
    seen: set[tuple[PeerType, str]] = set()
    for j, link in enumerate(nvlinks):
        if (link.peer_type, link.peer_id) in seen:
            problems.append(
                f"{where}.nvlinks[{j}].peer_id: {link.peer_id!r} named twice (one entry per peer, its links added up)"
            )
        seen.add((link.peer_type, link.peer_id))


def _unique(problems: list[str], field: str, values: list[_T], key: str) -> set[_T]:
    seen: set[_T] = set()
    for i, v in enumerate(values):
        if v in seen:
            problems.append(f"{field}[{i}].{key}: duplicate {v!r}")
        seen.add(v)
    return seen


def _check_mig(problems: list[str], gpus: list[GPUFact], gpu_uuids: set[str]) -> None:
    """Slices only on a MIG-enabled GPU; slice uuids unique on the host and distinct from GPU uuids."""
    seen: set[str] = set()
    for i, g in enumerate(gpus):
        if g.mig_slices and g.mig_mode is not True:
            problems.append(f"gpus[{i}].mig_slices: MIG slices on a GPU whose mig_mode is not true")
        ids: set[int] = set()
        for j, s in enumerate(g.mig_slices):
            if s.uuid in seen or s.uuid in gpu_uuids:
                problems.append(f"gpus[{i}].mig_slices[{j}].uuid: duplicate {s.uuid!r}")
            seen.add(s.uuid)
            if s.gpu_instance_id in ids:
                problems.append(f"gpus[{i}].mig_slices[{j}].gpu_instance_id: duplicate {s.gpu_instance_id}")
            ids.add(s.gpu_instance_id)


def _check_acyclic(problems: list[str], switches: list[PCIeSwitchFact]) -> None:
    parent = {s.bus_id: s.parent for s in switches}
    for i, s in enumerate(switches):
        seen = {s.bus_id}
        cur = s.parent
        while cur is not None and cur in parent:
            if cur in seen:
                problems.append(f"pcie_switches[{i}].parent: PCIe switch chain loops through {cur!r}")
                break
            seen.add(cur)
            cur = parent[cur]


class GPUMetrics(GPUState):
    """The fast-changing part of a GPU's facts, sent more often than the full facts."""

    uuid: Ident


class HostMetrics(_Strict):
    hostname: HostName
    collected_at: datetime
    gpus: list[GPUMetrics] = Field(default_factory=list, max_length=MAX_GPUS_PER_HOST)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.collected_at.tzinfo is None:
            raise ValueError("collected_at: must carry a timezone (UTC recommended)")
        problems: list[str] = []
        _unique(problems, "gpus", [g.uuid for g in self.gpus], "uuid")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @staticmethod
    def of(facts: HostFacts) -> HostMetrics:
        return HostMetrics(
            hostname=facts.hostname,
            collected_at=facts.collected_at,
            gpus=[
                GPUMetrics(uuid=g.uuid, **{name: getattr(g, name) for name in GPUState.model_fields})
                for g in facts.gpus
            ],
        )


class FabricSwitch(_Strict):
    name: HostName
    tier: SwitchTier
    scalable_unit: HostName | None = None
    rail: int | None = Field(default=None, ge=0, lt=64)
    model: Text | None = None


class NICUplink(_Strict):
    """A cable from a host NIC to a (leaf) switch port."""

    host: HostName
    nic: Ident
    switch: HostName
    links: int = Field(default=1, ge=1, le=64)
    bandwidth_gbps: float = Field(ge=0, le=100_000, description="GB/s over all cables")


class SwitchUplink(_Strict):
    """Cables from a lower-tier switch to a higher-tier one."""

    lower: HostName
    upper: HostName
    links: int = Field(default=1, ge=1, le=1024)
    bandwidth_gbps: float = Field(ge=0, le=1_000_000, description="GB/s over all cables")


class FabricFacts(_Strict):
    """The switch fabric of one cluster; a PUT replaces the previous one whole."""

    cluster: HostName = "default"
    collected_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    source: Text = "operator"
    switches: list[FabricSwitch] = Field(default_factory=list, max_length=MAX_FABRIC_SWITCHES)
    nic_uplinks: list[NICUplink] = Field(default_factory=list, max_length=MAX_FABRIC_LINKS)
    switch_uplinks: list[SwitchUplink] = Field(default_factory=list, max_length=MAX_FABRIC_LINKS)

    @model_validator(mode="after")
    def _check_references(self) -> Self:
        problems: list[str] = []
        tiers: dict[str, SwitchTier] = {}
        for i, s in enumerate(self.switches):
            if s.name in tiers:
                problems.append(f"switches[{i}].name: duplicate {s.name!r}")
            tiers[s.name] = s.tier
        seen_nics: set[tuple[str, str]] = set()
        for i, u in enumerate(self.nic_uplinks):
            if u.switch not in tiers:
                problems.append(f"nic_uplinks[{i}].switch: unknown switch {u.switch!r}")
            if (u.host, u.nic) in seen_nics:
                problems.append(f"nic_uplinks[{i}]: NIC {u.host}/{u.nic} is cabled twice")
            seen_nics.add((u.host, u.nic))
        for i, su in enumerate(self.switch_uplinks):
            lo, hi = tiers.get(su.lower), tiers.get(su.upper)
            if lo is None:
                problems.append(f"switch_uplinks[{i}].lower: unknown switch {su.lower!r}")
            if hi is None:
                problems.append(f"switch_uplinks[{i}].upper: unknown switch {su.upper!r}")
            if lo is not None and hi is not None and TIER_ORDER[lo] >= TIER_ORDER[hi]:
                problems.append(f"switch_uplinks[{i}]: {su.lower!r} ({lo}) must be below {su.upper!r} ({hi})")
        if problems:
            raise ValueError("; ".join(problems[:20]))
        return self
