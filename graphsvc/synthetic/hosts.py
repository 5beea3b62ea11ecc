"""Host fact builders for the reference systems, shaped like what a collector reports.

Numbers come from ``shared/data/facts/dgx-superpod-reference-architectures.json`` and
the domain primer: DGX H100 (8 GPUs, 4 NVSwitches, 18 NVLink4 links per GPU at 50 GB/s
bidirectional each, 8 ConnectX-7 at 400 Gb/s, GPU i served by NIC i per the DGX H100
port map), GB200 NVL72 compute trays (4 GPUs, one link to each of 18 rack NVSwitch
chips, 1.8 TB/s per GPU, clique id shared by the rack), A100 PCIe with NVLink bridges
in pairs, L40S PCIe-only, and the DGX-1 V100 hybrid cube-mesh (a partial mesh).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from topo_facts import (
    GPUFact,
    GPUNICAffinity,
    Health,
    HostFacts,
    LinkLayer,
    NICFact,
    NUMANodeFact,
    NVLinkFact,
    NVSwitchFact,
    PCIeSwitchFact,
    PeerType,
    PortState,
)

COLLECTOR_VERSION = "synthetic-0.1.0"

# DGX H100 user guide, table 6 (via the facts file): GPU -> (rdma dev, netdev, CPU socket).
DGX_H100_PORT_MAP = {
    0: ("mlx5_0", "ibp24s0", 0),
    1: ("mlx5_3", "ibp64s0", 0),
    2: ("mlx5_4", "ibp79s0", 0),
    3: ("mlx5_5", "ibp94s0", 0),
    4: ("mlx5_6", "ibp154s0", 1),
    5: ("mlx5_9", "ibp192s0", 1),
    6: ("mlx5_10", "ibp206s0", 1),
    7: ("mlx5_11", "ibp220s0", 1),
}
DGX_H100_GPU_BUS = [0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF]
NVLINK4_GBPS_PER_LINK = 50.0  # 900 GB/s over 18 links, bidirectional
NVLINK5_GBPS_PER_LINK = 100.0  # 1.8 TB/s over 18 links
NVLINK3_GBPS_PER_LINK = 50.0  # A100: 600 GB/s over 12 links
NVLINK2_GBPS_PER_LINK = 50.0  # V100: 300 GB/s over 6 links


@dataclass(frozen=True)
class HostSpec:
    name: str
    cluster: str
    rack: str
    scalable_unit: str | None
    seed: int


def _bus(bus: int, domain: int = 0) -> str:
    return f"{domain:04x}:{bus:02x}:00.0"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _guid(rng: random.Random) -> str:
    return f"0x{rng.getrandbits(64):016x}"


def _telemetry(rng: random.Random, memory_mib: int) -> dict[str, object]:
    """Plausible load: most GPUs busy and warm, a few idle, about 1% degraded."""
    busy = rng.random() < 0.6
    util = rng.uniform(70, 100) if busy else rng.uniform(0, 5)
    temp = rng.uniform(55, 82) if busy else rng.uniform(28, 40)
    roll = rng.random()
    health, reasons, ecc, retired = Health.OK, [], 0, 0
    if roll < 0.003:
        health, reasons, ecc = Health.FAILED, ["XID 79: GPU has fallen off the bus"], 3
    elif roll < 0.012:
        health, reasons, retired = Health.DEGRADED, ["retired pages pending"], rng.randint(1, 8)
    return {
        "health": health,
        "health_reasons": reasons,
        "ecc_uncorrected": ecc,
        "retired_pages": retired,
        "temperature_c": round(temp, 1),
        "power_w": round(80 + util * 6.2, 1),
        "utilization_pct": round(util, 1),
        "memory_used_mib": int(memory_mib * (rng.uniform(0.6, 0.95) if busy else 0.01)),
    }


def _base(spec: HostSpec, **kw: object) -> HostFacts:
    return HostFacts(
        hostname=spec.name,
        cluster=spec.cluster,
        rack=spec.rack,
        scalable_unit=spec.scalable_unit,
        collected_at=datetime.now(UTC),
        collector_version=COLLECTOR_VERSION,
        **kw,
    )


def dgx_h100(spec: HostSpec) -> HostFacts:
    rng = random.Random(spec.seed)
    memory = 81559
    nvswitches = [NVSwitchFact(id=_bus(0x05 + k), pci_bus_id=_bus(0x05 + k)) for k in range(4)]
    link_counts = (5, 5, 4, 4)
    switches: list[PCIeSwitchFact] = []
    gpus: list[GPUFact] = []
    nics: list[NICFact] = []
    affinity: list[GPUNICAffinity] = []
    for i in range(8):
        rdma, netdev, socket = DGX_H100_PORT_MAP[i]
        gpu_bus = DGX_H100_GPU_BUS[i]
        nic_bus = int(netdev[3:].split("s")[0])
        switch_bus = _bus(gpu_bus - 2)
        switches.append(PCIeSwitchFact(bus_id=switch_bus, generation=5, width=16, numa_node=socket))
        uuid = _uuid(rng)
        gpus.append(
            GPUFact(
                uuid=uuid,
                index=i,
                model="NVIDIA H100 80GB HBM3",
                memory_mib=memory,
                pci_bus_id=_bus(gpu_bus),
                numa_node=socket,
                compute_capability="9.0",
                mig_mode=False,
                pcie_path=[switch_bus],
                nvlinks=[
                    NVLinkFact(
                        peer_type=PeerType.NVSWITCH,
                        peer_id=nvswitches[k].id,
                        links=n,
                        bandwidth_gbps=n * NVLINK4_GBPS_PER_LINK,
                        generation=4,
                    )
                    for k, n in enumerate(link_counts)
                ],
                **_telemetry(rng, memory),
            )
        )
        nics.append(
            NICFact(
                name=rdma,
                netdev=netdev,
                guid=_guid(rng),
                pci_bus_id=_bus(nic_bus),
                rate_gbps=400,
                state=PortState.ACTIVE,
                link_layer=LinkLayer.INFINIBAND,
                numa_node=socket,
                rail=i,
                pcie_path=[switch_bus],
            )
        )
        affinity.append(GPUNICAffinity(gpu_uuid=uuid, nic=rdma, via="pcie-switch"))
    return _base(
        spec,
        cpu_model="Intel(R) Xeon(R) Platinum 8480C",
        numa_nodes=[
            NUMANodeFact(index=0, cpus="0-55,112-167", memory_mib=1_031_000),
            NUMANodeFact(index=1, cpus="56-111,168-223", memory_mib=1_031_000),
        ],
        gpus=gpus,
        nvswitches=nvswitches,
        pcie_switches=switches,
        nics=nics,
        gpu_nic_affinity=affinity,
    )


def gb200_tray(spec: HostSpec, clique: str) -> HostFacts:
    """One NVL72 compute tray: 2 Grace CPUs, 4 Blackwell GPUs, 4 CX-7 NICs; the clique spans the rack."""
    rng = random.Random(spec.seed)
    memory = 189471
    nvswitches = [NVSwitchFact(id=f"rack-nvswitch-{k}", location="rack") for k in range(18)]
    gpus, nics, affinity = [], [], []
    for i in range(4):
        socket = i // 2
        uuid = _uuid(rng)
        gpus.append(
            GPUFact(
                uuid=uuid,
                index=i,
                model="NVIDIA GB200",
                memory_mib=memory,
                pci_bus_id=_bus(0x01, domain=0x0008 * (i + 1)),
                numa_node=socket,
                compute_capability="10.0",
                mig_mode=False,
                nvlink_domain=clique,
                nvlinks=[
                    NVLinkFact(
                        peer_type=PeerType.NVSWITCH,
                        peer_id=sw.id,
                        links=1,
                        bandwidth_gbps=NVLINK5_GBPS_PER_LINK,
                        generation=5,
                    )
                    for sw in nvswitches
                ],
                **_telemetry(rng, memory),
            )
        )
        name = f"mlx5_{i}"
        nics.append(
            NICFact(
                name=name,
                netdev=f"ibp{i}s0",
                guid=_guid(rng),
                pci_bus_id=_bus(0x03, domain=0x0008 * (i + 1)),
                rate_gbps=400,
                state=PortState.ACTIVE,
                numa_node=socket,
                rail=i,
            )
        )
        affinity.append(GPUNICAffinity(gpu_uuid=uuid, nic=name, via="numa"))
    return _base(
        spec,
        cpu_model="NVIDIA Grace",
        numa_nodes=[NUMANodeFact(index=0, cpus="0-71"), NUMANodeFact(index=1, cpus="72-143")],
        gpus=gpus,
        nvswitches=nvswitches,
        nics=nics,
        gpu_nic_affinity=affinity,
    )


def _pcie_host(
    spec: HostSpec,
    *,
    model: str,
    memory: int,
    cc: str,
    gpus_per_host: int,
    pairs: list[tuple[int, int, int]],
    link_gbps: float,
    generation: int | None,
    nic_count: int,
    nic_rate: float,
    link_layer: LinkLayer,
) -> HostFacts:
    """A PCIe server: two GPUs per PCIe switch, NICs on the first switches of each socket."""
    rng = random.Random(spec.seed)
    switches: list[PCIeSwitchFact] = []
    gpus: list[GPUFact] = []
    uuids = [_uuid(rng) for _ in range(gpus_per_host)]
    peers: dict[int, list[tuple[int, int]]] = {i: [] for i in range(gpus_per_host)}
    for a, b, n in pairs:
        peers[a].append((b, n))
        peers[b].append((a, n))
    half = max(1, gpus_per_host // 2)
    for s in range((gpus_per_host + 1) // 2):
        switches.append(
            PCIeSwitchFact(bus_id=_bus(0x10 + 0x20 * s), generation=4, width=16, numa_node=min(1, (2 * s) // half))
        )
    for i in range(gpus_per_host):
        switch = switches[i // 2]
        gpus.append(
            GPUFact(
                uuid=uuids[i],
                index=i,
                model=model,
                memory_mib=memory,
                pci_bus_id=_bus(0x12 + 0x20 * (i // 2) + (i % 2)),
                numa_node=switch.numa_node,
                compute_capability=cc,
                mig_mode=False,
                pcie_path=[switch.bus_id],
                nvlinks=[
                    NVLinkFact(
                        peer_type=PeerType.GPU,
                        peer_id=uuids[p],
                        links=n,
                        bandwidth_gbps=n * link_gbps,
                        generation=generation,
                    )
                    for p, n in peers[i]
                ],
                **_telemetry(rng, memory),
            )
        )
    nics: list[NICFact] = []
    affinity: list[GPUNICAffinity] = []
    nic_switches = [switches[0], switches[len(switches) // 2]][:nic_count] if nic_count <= 2 else switches
    for k in range(nic_count):
        sw = nic_switches[k % len(nic_switches)]
        name = f"mlx5_{k}"
        nics.append(
            NICFact(
                name=name,
                netdev=f"ens{k + 1}np0" if link_layer is LinkLayer.ETHERNET else f"ibp{0x11 + k}s0",
                guid=_guid(rng),
                pci_bus_id=_bus(0x11 + 0x20 * switches.index(sw) + 0x0A * (k // len(nic_switches))),
                rate_gbps=nic_rate,
                state=PortState.ACTIVE,
                link_layer=link_layer,
                numa_node=sw.numa_node,
                rail=k,
                pcie_path=[sw.bus_id],
            )
        )
    for g in gpus:
        same_switch = [n for n in nics if n.pcie_path and g.pcie_path and n.pcie_path[0] == g.pcie_path[0]]
        same_numa = [n for n in nics if n.numa_node == g.numa_node]
        if same_switch:
            affinity.append(GPUNICAffinity(gpu_uuid=g.uuid, nic=same_switch[0].name, via="pcie-switch"))
        elif same_numa:
            affinity.append(GPUNICAffinity(gpu_uuid=g.uuid, nic=same_numa[0].name, via="numa"))
    return _base(
        spec,
        cpu_model="AMD EPYC 7763 64-Core Processor",
        numa_nodes=[NUMANodeFact(index=0, cpus="0-63"), NUMANodeFact(index=1, cpus="64-127")],
        gpus=gpus,
        pcie_switches=switches,
        nics=nics,
        gpu_nic_affinity=affinity,
    )


def a100_pcie(spec: HostSpec) -> HostFacts:
    """8x A100 80GB PCIe, NVLink bridges join (0,1), (2,3), ...: 12 NVLink3 links per pair."""
    return _pcie_host(
        spec,
        model="NVIDIA A100 80GB PCIe",
        memory=81920,
        cc="8.0",
        gpus_per_host=8,
        pairs=[(i, i + 1, 12) for i in range(0, 8, 2)],
        link_gbps=NVLINK3_GBPS_PER_LINK,
        generation=3,
        nic_count=2,
        nic_rate=200,
        link_layer=LinkLayer.INFINIBAND,
    )


def l40s(spec: HostSpec) -> HostFacts:
    """4x L40S: no NVLink at all; one 200 Gb/s RoCE NIC."""
    return _pcie_host(
        spec,
        model="NVIDIA L40S",
        memory=46068,
        cc="8.9",
        gpus_per_host=4,
        pairs=[],
        link_gbps=0,
        generation=None,
        nic_count=1,
        nic_rate=200,
        link_layer=LinkLayer.ETHERNET,
    )


# DGX-1 (V100) hybrid cube-mesh: two fully connected quads plus i <-> i+4, 6 links per GPU.
DGX1_CUBE_MESH = [
    (0, 1, 1),
    (0, 2, 1),
    (0, 3, 2),
    (0, 4, 2),
    (1, 2, 2),
    (1, 3, 1),
    (1, 5, 2),
    (2, 3, 1),
    (2, 6, 2),
    (3, 7, 2),
    (4, 5, 1),
    (4, 6, 1),
    (4, 7, 2),
    (5, 6, 2),
    (5, 7, 1),
    (6, 7, 1),
]


def dgx1_v100(spec: HostSpec) -> HostFacts:
    return _pcie_host(
        spec,
        model="Tesla V100-SXM2-32GB",
        memory=32768,
        cc="7.0",
        gpus_per_host=8,
        pairs=DGX1_CUBE_MESH,
        link_gbps=NVLINK2_GBPS_PER_LINK,
        generation=2,
        nic_count=4,
        nic_rate=100,
        link_layer=LinkLayer.INFINIBAND,
    )


HostBuilder = Callable[[HostSpec], HostFacts]
