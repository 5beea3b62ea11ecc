"""A GPU's share of inter-host bandwidth (graphsvc.ingest.host_plan.nic_share_rates): a GPU with its
own ports (under a PCIe switch it shares with them) gets their summed rate, a port serving k such GPUs
counting 1/k to each; any other GPU its nearest port alone, after those GPUs' claims. The nearest NIC
alone (the GPU's rail) counted an AWS p5's four 100 Gb/s EFA per GPU as one: 12.5 GB/s, not 50. A GPU
that lost its own ports shared every port of its NUMA node at 1/k: 1400 Gb/s on a p5, above the
healthy GPUs it halved."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

import pytest
from topo_collector.derive import gpu_nic_affinity
from topo_collector.importers import ImportOptions, import_hosts
from topo_facts import GPUFact, GPUNICAffinity, HostFacts, NICFact, PCIeSwitchFact, PortState

from graphsvc.ingest.host_plan import PORT_DOWN, host_params, nic_share_rates
from graphsvc.placement.model import DEFAULT_NIC_GBPS, Gpu
from graphsvc.placement.select import NIC_DOWN
from graphsvc.synthetic.hosts import HostSpec, dgx_h100

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


def imported(name: str) -> HostFacts:
    return import_hosts(FIXTURES / name, ImportOptions(host="x", gpu_model="NVIDIA H100 80GB HBM3")).hosts[0]


def host(
    switches: dict[str, list[int]],
    ports: dict[str, list[tuple[str, float | None]]],
    *,
    down: Collection[str] = (),
    plain: Collection[str] = (),
    numa: dict[str, int] | None = None,
) -> HostFacts:
    """GPUs (by index) and NIC ports (name, Gb/s) under each PCIe switch; the affinity as the
    collector derives it. `down` ports are down, `plain` ones have no GUID (not RDMA); `numa` puts a
    switch's devices on a NUMA node (default 0)."""
    numa = numa or {}
    gpus = [
        GPUFact(uuid=f"GPU-{i}", index=i, model="H100", pcie_path=[bus], numa_node=numa.get(bus, 0))
        for bus, indices in switches.items()
        for i in indices
    ]
    nics = [
        NICFact(
            name=name,
            guid=None if name in plain else f"0x{name.encode().hex()}",
            rate_gbps=rate,
            state=PortState.DOWN if name in down else PortState.ACTIVE,
            pcie_path=[bus],
            numa_node=numa.get(bus, 0),
        )
        for bus, named in ports.items()
        for name, rate in named
    ]
    buses = sorted({*switches, *ports})
    return HostFacts(
        hostname="h",
        collected_at=datetime.now(UTC),
        collector_version="test",
        pcie_switches=[PCIeSwitchFact(bus_id=b, numa_node=numa.get(b, 0)) for b in buses],
        gpus=gpus,
        nics=nics,
        gpu_nic_affinity=gpu_nic_affinity(gpus, nics),
    )


def lost(facts: HostFacts, names: Collection[str]) -> HostFacts:
    """The facts with these NIC ports gone (a failed device, off the PCIe bus), the affinity
    re-derived by the collector's rule, as its next document would send them."""
    nics = [n for n in facts.nics if n.name not in names]
    return facts.model_copy(update={"nics": nics, "gpu_nic_affinity": gpu_nic_affinity(list(facts.gpus), nics)})


P5_GPU0_EFA = {"rdmap79s0", "rdmap80s0", "rdmap81s0", "rdmap82s0"}  # the 4 EFA under GPU0's PCIe switch
OCI_GPU0_NIC = {"mlx5_0", "mlx5_1"}  # both ports of GPU0's ConnectX-7


def by_index(facts: HostFacts) -> list[float]:
    shares = nic_share_rates(facts)
    return [shares[g.uuid] for g in sorted(facts.gpus, key=lambda g: g.index)]


S0, S1, S2, S3 = "0000:10:00.0", "0000:20:00.0", "0000:30:00.0", "0000:40:00.0"

CASES: list[tuple[str, HostFacts, list[float]]] = [
    # The real dumps: 4 x 100 Gb/s EFA under each GPU's switch (no GUIDs: every port is a candidate);
    # a dual-port ConnectX-7 (two ports, one PCI device) at 180 Gb/s per GPU.
    ("aws-p5 four ports per GPU", imported("aws-p5-48xlarge.nccl.xml"), [400.0] * 8),
    ("oci-h100 two ports per GPU", imported("oci-bm-gpu-h100-8.nccl.xml"), [360.0] * 8),
    # One 400 Gb/s port per GPU: the nearest NIC's rate, unchanged.
    ("dgx-h100 one port per GPU", dgx_h100(HostSpec("d", "default", "r", None, 1)), [400.0] * 8),
    ("a port shared by two GPUs", host({S0: [0, 1]}, {S0: [("mlx5_0", 400.0)]}), [200.0, 200.0]),
    # Azure ND A100 v4's shape: two GPUs and two ports under one switch, each port serving both.
    (
        "two GPUs and two ports under a switch",
        host({S0: [0, 1]}, {S0: [("mlx5_0", 200.0), ("mlx5_1", 200.0)]}),
        [200.0, 200.0],
    ),
    (
        "a down port adds nothing",
        host({S0: [0], S1: [1]}, {S0: [("a", 100.0), ("b", 100.0)], S1: [("c", 100.0), ("d", 100.0)]}, down={"b"}),
        [100.0, 200.0],
    ),
    ("every port down: unknown", host({S0: [0]}, {S0: [("a", 100.0)]}, down={"a"}), [0.0]),
    ("an up port of unknown rate: unknown", host({S0: [0]}, {S0: [("a", 100.0), ("b", None)]}), [0.0]),
    ("no NIC: unknown", host({S0: [0]}, {}), [0.0]),
    # No switch shared: the GPU's nearest port on its NUMA node serves it (a for both), not b.
    (
        "by NUMA node",
        host({S0: [0], S1: [1]}, {S2: [("a", 400.0)], S3: [("b", 400.0)]}, numa={S3: 1}),
        [200.0, 200.0],
    ),
    # A plain Ethernet port (no GUID) beside an RDMA one serves no GPU, as in the collector's rule.
    (
        "an Ethernet port beside an HCA",
        host({S0: [0]}, {S0: [("eth0", 100.0)], S1: [("mlx5_0", 400.0)]}, plain={"eth0"}),
        [400.0],
    ),
    # A GPU that lost its own ports (the collector then names a port of another GPU on its NUMA
    # node): that port alone, split with the GPU whose own it is; the others keep theirs. Until
    # the fix GPU0 shared all 28 p5 ports of its NUMA node (1400) and halved the rest (200).
    ("aws-p5 GPU0's four EFA lost", lost(imported("aws-p5-48xlarge.nccl.xml"), P5_GPU0_EFA), [50.0] + [400.0] * 7),
    # Was 540 for GPU0 and 180 for GPUs 1-3, its NUMA node's.
    ("oci-h100 GPU0's NIC lost", lost(imported("oci-bm-gpu-h100-8.nccl.xml"), OCI_GPU0_NIC), [90.0] + [360.0] * 7),
    # No NIC at all: every GPU unknown (placement then guesses 100 Gb/s, DEFAULT_NIC_GBPS).
    ("a host with no NIC at all", host({S0: [0, 1], S1: [2, 3]}, {}, numa={S1: 1}), [0.0] * 4),
    # A NUMA node with no NIC: GPU1 reaches a only across the host; GPU0 keeps its port (was 200, 200).
    ("a NUMA node with no NIC", host({S0: [0], S1: [1]}, {S0: [("a", 400.0)]}, numa={S1: 1}), [400.0, 200.0]),
    # Two GPUs sharing their switch's port keep half each whoever else on the NUMA node reaches it
    # (GPU2, its nearest port: a third of it). Was a third each.
    (
        "a port shared by two GPUs under a switch, a third GPU beside",
        host({S0: [0, 1], S1: [2]}, {S0: [("mlx5_0", 400.0)]}),
        [200.0, 200.0, round(400.0 / 3, 6)],
    ),
    # A port no GPU has under its switch, nearest to GPU1 alone: never above a GPU with its own
    # port (was 50 for GPU0, which GPU1 shared, and 450 for GPU1).
    (
        "a GPU without its own port is never above one with its own",
        host({S0: [0], S1: [1]}, {S0: [("a", 100.0)], S2: [("b", 400.0)]}),
        [100.0, 100.0],
    ),
]


@pytest.mark.parametrize(("facts", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_share_of_the_ports_serving_each_gpu(facts: HostFacts, expected: list[float]) -> None:
    assert by_index(facts) == expected


def test_the_share_is_written_on_every_gpu_as_a_float() -> None:
    params = host_params(imported("aws-p5-48xlarge.nccl.xml"), received_at=0.0)
    assert {g["props"]["nic_share_rate_gbps"] for g in params["gpus"]} == {400.0}
    none = host_params(host({S0: [0]}, {}), received_at=0.0)
    assert [type(g["props"]["nic_share_rate_gbps"]) for g in none["gpus"]] == [float]


def test_an_affinity_the_paths_do_not_explain_keeps_its_nearest_port_alone() -> None:
    """A document whose affinity another rule (or no PCIe path) chose: that port's rate, today's number."""
    facts = host({S0: [0], S1: [1]}, {S0: [("a", 100.0), ("b", 100.0)], S1: [("c", 100.0)]})
    other = facts.model_copy(update={"gpu_nic_affinity": [GPUNICAffinity(gpu_uuid="GPU-0", nic="c", via="host")]})
    assert by_index(other) == [100.0, 0.0]  # GPU-1 has no affinity: no NIC serves it (today's default)


def test_ports_down_are_the_ports_placement_takes_for_down() -> None:
    assert {s.value for s in PORT_DOWN} == set(NIC_DOWN)


def gpu(share: float | None, nearest: float | None) -> Gpu:
    return Gpu(
        uuid="g", index=0, host="h", model="H100", memory_mib=None, state="free", health=None,
        temperature_c=None, utilization_pct=None, nvlink_domain=None, domain_kind=None, nic="mlx5_0",
        rail=0, nic_rate_gbps=nearest, via="pcie-switch", leaf="l", nic_share_rate_gbps=share,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("share", "nearest", "gbps"),
    [
        (400.0, 100.0, 50.0),  # the share, not the nearest port
        (None, 100.0, 12.5),  # a graph written before the share: the nearest port, as before
        (0.0, 400.0, 50.0),  # unknown share: the nearest port
        (0.0, None, DEFAULT_NIC_GBPS),
    ],
)
def test_nic_gbps_reads_the_share_else_the_nearest_port(
    share: float | None, nearest: float | None, gbps: float
) -> None:
    assert gpu(share, nearest).nic_gbps == gbps
