"""The host topology read model's derivations, as tables (no store)."""

from __future__ import annotations

import pytest

from graphsvc.read.hosts import (
    HostLayout,
    NicAffinity,
    NVLinkEdge,
    PcieSwitch,
    TopologyGpu,
    gpus_served,
    nvlink_lanes,
    root_switch,
    switch_lanes,
    topo_matrix,
)


def gpu(i: int, domain: str | None = "d", numa: int | None = 0) -> TopologyGpu:
    return TopologyGpu(uuid=f"g{i}", index=i, model="H100", nvlink_domain=domain, numa_node=numa)


def to_switch(i: int, lanes: int, switch: str = "sw") -> NVLinkEdge:
    return NVLinkEdge(i, f"g{i}", switch, "NVSwitch", lanes)


def direct(a: int, b: int, lanes: int) -> NVLinkEdge:
    return NVLinkEdge(a, f"g{a}", f"g{b}", "GPU", lanes)


@pytest.mark.parametrize(
    ("gpus", "edges", "expected"),
    [
        # NVSwitch system: every pair in the domain gets the fewer of the two GPUs' lanes.
        ([gpu(0), gpu(1)], [to_switch(0, 18), to_switch(1, 12)], {(0, 1): 12, (1, 0): 12}),
        # Lanes to several switches add up.
        ([gpu(0), gpu(1)], [to_switch(0, 9, "a"), to_switch(0, 9, "b"), to_switch(1, 18)], {(0, 1): 18, (1, 0): 18}),
        # Different domains: no NVLink between them through switches.
        ([gpu(0, "x"), gpu(1, "y")], [to_switch(0, 18), to_switch(1, 18)], {}),
        # No domain: none.
        ([gpu(0, None), gpu(1, None)], [to_switch(0, 18), to_switch(1, 18)], {}),
        # Direct links (stored once per pair) count both ways and win over switches.
        ([gpu(0), gpu(1)], [direct(0, 1, 4), to_switch(0, 18), to_switch(1, 18)], {(0, 1): 4, (1, 0): 4}),
        # A GPU without switch lanes has no switched NVLink (not NV0).
        ([gpu(0), gpu(1)], [to_switch(0, 18)], {}),
    ],
)
def test_nvlink_lanes(gpus: list[TopologyGpu], edges: list[NVLinkEdge], expected: dict[tuple[int, int], int]) -> None:
    assert nvlink_lanes(gpus, edges) == expected


def test_switch_lanes_ignore_direct_links() -> None:
    assert switch_lanes([direct(0, 1, 4), to_switch(0, 6), to_switch(0, 6)]) == {0: 12}


def test_topo_matrix_falls_back_to_pcie_classes() -> None:
    gpus = [gpu(0), gpu(1), gpu(2, numa=1)]
    layout = HostLayout(
        pcie_switches=[PcieSwitch("s0", None, 5, 16, 0), PcieSwitch("s1", None, 5, 16, 1)],
        attachments={"g0": "s0", "g1": "s0", "g2": "s1"},
    )
    assert topo_matrix(gpus, [direct(0, 1, 2)], layout) == [
        ["X", "NV2", "SYS"],
        ["NV2", "X", "SYS"],
        ["SYS", "SYS", "X"],
    ]
    assert topo_matrix(gpus, [], layout)[0][1] == "PIX"


def test_root_switch_climbs_the_tree() -> None:
    layout = HostLayout(
        pcie_switches=[PcieSwitch("root", None, 5, 16, 0), PcieSwitch("leaf", "root", 5, 16, 0)],
        attachments={"g0": "leaf"},
    )
    assert root_switch(layout, "g0") == "root"
    assert root_switch(layout, "unattached") is None


def test_gpus_served_by_nic() -> None:
    affinity = [NicAffinity(1, "mlx5_0", 0, "pcie-switch"), NicAffinity(0, "mlx5_0", 0, "pcie-switch")]
    assert gpus_served(affinity) == {"mlx5_0": [0, 1]}
