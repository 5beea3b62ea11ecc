"""A GPU's share of inter-host bandwidth (graphsvc.ingest.host_plan.nic_share_rates): the summed rate
of the NIC ports that serve it, a port serving k GPUs counting 1/k to each. The nearest NIC alone
(the GPU's rail) counted an AWS p5's four 100 Gb/s EFA per GPU as one: 12.5 GB/s, not 50."""

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
    # No switch shared: the ports on the GPU's NUMA node serve it (and every GPU there), not b.
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
