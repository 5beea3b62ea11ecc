"""The `nvidia-smi topo -m` PCIe classes, as a table."""

from __future__ import annotations

import pytest

from graphsvc.topology import pcie_class

TREE = {"sw0": "root0", "sw1": "root0", "sw2": None, "root0": None, "sw3": None}


@pytest.mark.parametrize(
    ("a", "b", "numa_a", "numa_b", "want"),
    [
        ("sw0", "sw0", 0, 0, "PIX"),  # one switch
        ("sw0", "sw1", 0, 0, "PXB"),  # two switches under one upstream switch
        ("sw0", "root0", 0, 0, "PXB"),  # one below the other
        ("sw0", "sw2", 0, 0, "NODE"),  # separate trees, one socket
        ("sw2", "sw3", 0, 1, "SYS"),  # across sockets
        (None, None, 1, 1, "PHB"),  # both on the host bridge of one socket
        (None, "sw2", 0, None, "SYS"),  # unknown NUMA node: assume the worst
        ("sw0", "sw0", 0, 1, "PIX"),  # the switch decides, whatever the recorded NUMA node
    ],
)
def test_pcie_class(a: str | None, b: str | None, numa_a: int | None, numa_b: int | None, want: str) -> None:
    assert pcie_class(a, b, numa_a, numa_b, TREE) == want
