"""The PCIe distance classes of `nvidia-smi topo -m`, from the host's recorded PCIe tree.

Operators read a GPU pair's path in those words, so the host view says PIX/PXB/NODE/SYS
rather than a bare "PCIe". Pure function over plain data (table-tested):

- PIX: both devices hang off the same PCIe switch (at most one bridge);
- PXB: different switches below a common upstream switch (several bridges, no host bridge);
- PHB: the path crosses one PCIe host bridge (same NUMA node, neither device behind a switch);
- NODE: different switch trees within one NUMA node (across host bridges);
- SYS: across the CPU interconnect between NUMA nodes (or where the NUMA node is unknown).
"""

from __future__ import annotations

from collections.abc import Mapping


def _ancestors(switch: str | None, parent: Mapping[str, str | None]) -> list[str]:
    chain: list[str] = []
    while switch is not None and switch not in chain:
        chain.append(switch)
        switch = parent.get(switch)
    return chain


def pcie_class(
    switch_a: str | None,
    switch_b: str | None,
    numa_a: int | None,
    numa_b: int | None,
    parent: Mapping[str, str | None],
) -> str:
    """The `topo -m` word for two devices given the switch each hangs off and the switch tree."""
    if switch_a is not None and switch_a == switch_b:
        return "PIX"
    up_a, up_b = _ancestors(switch_a, parent), _ancestors(switch_b, parent)
    if set(up_a) & set(up_b):
        return "PXB"
    if numa_a is None or numa_b is None or numa_a != numa_b:
        return "SYS"
    if switch_a is None and switch_b is None:
        return "PHB"
    return "NODE"
