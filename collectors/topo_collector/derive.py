"""Facts derived from the PCIe tree: which NIC serves which GPU, and rail indices.

GPUDirect RDMA is only fast when GPU and NIC share a PCIe switch, so the NIC under the
deepest switch shared with the GPU wins; failing that one on the same NUMA node; failing
that any NIC. RDMA-capable NICs (those with a GUID) are preferred over plain Ethernet
ports, so a management port never serves a GPU that has an HCA. Among equally near NICs
the one serving fewest GPUs wins, counted per device before per port: the two ports of a
dual-port NIC (one PCI device) are one device, so a sibling NIC is used before a second
port of a busy one. A NIC directly under a CPU (no switch) is still a NIC: it serves by
NUMA node.

Rails: the NIC port serving GPU i is rail i (on a DGX H100, rail i = the NIC of GPU i);
ports serving no GPU come after, in order of the GPU nearest to them, one port per rail.
"""

from __future__ import annotations

import re

from topo_facts import GPUFact, GPUNICAffinity, NICFact


def natural(name: str) -> tuple[object, ...]:
    """mlx5_9 before mlx5_10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _shared_depth(a: list[str], b: list[str]) -> int | None:
    """How far up a's chain the first switch shared with b is (0 = a's own switch)."""
    on_b = set(b)
    for depth, bus in enumerate(a):
        if bus in on_b:
            return depth
    return None


def _candidates(nics: list[NICFact]) -> list[NICFact]:
    rdma = [n for n in nics if n.guid]
    return sorted(rdma or nics, key=lambda n: natural(n.name))


def _device(nic: NICFact) -> str:
    """Ports of one dual-port NIC share its PCI function (NCCL lists them under one <pci>)."""
    return nic.pci_bus_id or nic.name


def nearest_nic(gpu: GPUFact, nics: list[NICFact], taken: dict[str, int] | None = None) -> GPUNICAffinity | None:
    """Nearest by PCIe (shared switch, then NUMA node, then the host); least used device and port among equals."""
    taken = taken if taken is not None else {}
    best: tuple[tuple[object, ...], NICFact, str] | None = None
    for nic in _candidates(nics):
        depth = _shared_depth(list(gpu.pcie_path), list(nic.pcie_path))
        if depth is not None:
            tier, via = (0, depth), "pcie-switch"
        elif gpu.numa_node is not None and nic.numa_node == gpu.numa_node:
            tier, via = (1, 0), "numa"
        else:
            tier, via = (2, 0), "host"
        score = (*tier, taken.get("dev:" + _device(nic), 0), taken.get(nic.name, 0), natural(nic.name))
        if best is None or score < best[0]:
            best = (score, nic, via)
    if best is None:
        return None
    _, nic, via = best
    taken["dev:" + _device(nic)] = taken.get("dev:" + _device(nic), 0) + 1
    taken[nic.name] = taken.get(nic.name, 0) + 1
    return GPUNICAffinity(gpu_uuid=gpu.uuid, nic=nic.name, via=via)


def gpu_nic_affinity(gpus: list[GPUFact], nics: list[NICFact]) -> list[GPUNICAffinity]:
    taken: dict[str, int] = {}
    ordered = sorted(gpus, key=lambda g: g.index)
    return [a for g in ordered if (a := nearest_nic(g, nics, taken)) is not None]


def assign_rails(gpus: list[GPUFact], nics: list[NICFact]) -> list[NICFact]:
    """Rail index for every RDMA NIC port serving or near a GPU; NICs that already carry one keep it."""
    if any(n.rail is not None for n in nics) or not gpus:
        return nics
    index = {g.uuid: g.index for g in gpus}
    order: dict[str, tuple[int, int, int]] = {}
    for a in gpu_nic_affinity(gpus, nics):
        order.setdefault(a.nic, (0, index[a.gpu_uuid], 0))
    for nic in _candidates(nics):
        if nic.name in order:
            continue
        best: tuple[int, int] | None = None
        for gpu in gpus:
            depth = _shared_depth(list(nic.pcie_path), list(gpu.pcie_path))
            if depth is not None and (best is None or (depth, gpu.index) < best):
                best = (depth, gpu.index)
        if best is not None:
            order[nic.name] = (1, best[1], best[0])
    if not order:
        return nics
    ranked = sorted(order, key=lambda name: (order[name], natural(name)))
    rail = {name: r for r, name in enumerate(ranked)}
    return [n.model_copy(update={"rail": rail.get(n.name)}) for n in nics]
