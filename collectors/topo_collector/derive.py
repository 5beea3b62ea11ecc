"""Facts derived from the PCIe tree: which NIC serves which GPU, and rail indices.

GPUDirect RDMA is only fast when GPU and NIC share a PCIe switch, so a NIC under
the same switch wins; failing that one on the same NUMA node; failing that any NIC.
RDMA-capable NICs (those with a GUID) are preferred over plain Ethernet ports, so a
management port never serves a GPU that has an HCA. Rail r is the r-th NIC when
NICs are ordered by the GPU nearest to them: on a DGX H100, rail i = the NIC of GPU i.
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


def nearest_nic(gpu: GPUFact, nics: list[NICFact], taken: dict[str, int] | None = None) -> GPUNICAffinity | None:
    """Deepest shared switch wins; among equals, the NIC serving fewest GPUs so far (1:1 pairing)."""
    taken = taken if taken is not None else {}
    best: tuple[int, int, NICFact] | None = None
    for nic in _candidates(nics):
        depth = _shared_depth(list(gpu.pcie_path), list(nic.pcie_path))
        if depth is None:
            continue
        score = (depth, taken.get(nic.name, 0))
        if best is None or score < best[:2]:
            best = (*score, nic)
    if best is not None:
        taken[best[2].name] = taken.get(best[2].name, 0) + 1
        return GPUNICAffinity(gpu_uuid=gpu.uuid, nic=best[2].name, via="pcie-switch")
    for nic in _candidates(nics):
        if gpu.numa_node is not None and nic.numa_node == gpu.numa_node:
            return GPUNICAffinity(gpu_uuid=gpu.uuid, nic=nic.name, via="numa")
    cands = _candidates(nics)
    return GPUNICAffinity(gpu_uuid=gpu.uuid, nic=cands[0].name, via="host") if cands else None


def gpu_nic_affinity(gpus: list[GPUFact], nics: list[NICFact]) -> list[GPUNICAffinity]:
    taken: dict[str, int] = {}
    ordered = sorted(gpus, key=lambda g: g.index)
    return [a for g in ordered if (a := nearest_nic(g, nics, taken)) is not None]


def assign_rails(gpus: list[GPUFact], nics: list[NICFact]) -> list[NICFact]:
    """Rail index for every NIC that sits nearest to some GPU; NICs that already carry one keep it."""
    if any(n.rail is not None for n in nics) or not gpus:
        return nics
    nearest_gpu: dict[str, int] = {}
    for nic in _candidates(nics):
        best: tuple[int, int] | None = None
        for gpu in gpus:
            depth = _shared_depth(list(nic.pcie_path), list(gpu.pcie_path))
            if depth is not None and (best is None or (depth, gpu.index) < best):
                best = (depth, gpu.index)
        if best is not None:
            nearest_gpu[nic.name] = best[1]
    if not nearest_gpu:
        return nics
    order = sorted(nearest_gpu, key=lambda name: (nearest_gpu[name], natural(name)))
    rail = {name: r for r, name in enumerate(order)}
    return [n.model_copy(update={"rail": rail.get(n.name)}) for n in nics]
