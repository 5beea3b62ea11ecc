"""AMD GPU facts from AMD SMI: inventory, identity by PCI id, xGMI links, NUMA node.

Works on any ``AmdSmiApi`` (the real library or a replayed recording). A call a GPU or
ROCm version does not support degrades to a missing fact. Model, memory and per-link
xGMI bandwidth come from the PCI id (``topo_facts/gpu_models.csv``) where AMD SMI's own
answer is missing; a pair that AMD SMI reports as XGMI at one hop is one direct link.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from topo_facts import GPUFact, NVLinkFact, PeerType
from topo_facts.gpu_models import by_pci

from topo_collector.amdsmi_api import LINK_TYPE_XGMI, AmdSmiApi, AmdSmiError
from topo_collector.nvml import normalize_bus_id

_T = TypeVar("_T")


@dataclass
class AmdInventory:
    gpus: list[GPUFact] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _opt(fn: Callable[..., _T], *args: int) -> _T | None:
    try:
        return fn(*args)
    except AmdSmiError:
        return None


def _hex(value: object) -> str | None:
    if isinstance(value, int):
        return f"0x{value:04x}"
    if isinstance(value, str) and value:
        return value
    return None


def read_amdsmi(api: AmdSmiApi) -> AmdInventory:
    """Everything AMD SMI tells about this host's GPUs. Raises AmdSmiError only if it is absent."""
    api.init()
    try:
        return _read(api)
    finally:
        with contextlib.suppress(AmdSmiError):
            api.shutdown()


def _read(api: AmdSmiApi) -> AmdInventory:
    inv = AmdInventory()
    count = api.processor_count()
    uuids = [_opt(api.uuid, i) or f"GPU-amd-{i}" for i in range(count)]
    for i in range(count):
        info = _opt(api.asic_info, i) or {}
        row = by_pci(_hex(info.get("vendor_id")), _hex(info.get("device_id")), _hex(info.get("subsystem_id")))
        vram = _opt(api.vram_total_mib, i)
        links = []
        for j in range(count):
            if j == i:
                continue
            kind = _opt(api.link_type, i, j) or {}
            if int(kind.get("type", 0)) != LINK_TYPE_XGMI or int(kind.get("hops", 0)) != 1:
                continue
            mbps = _opt(api.max_bandwidth_mbps, i, j)
            gbps = row.link_gbps if row is not None and row.link_gbps else (mbps / 1000 if mbps else 0.0)
            links.append(
                NVLinkFact(
                    peer_type=PeerType.GPU,
                    peer_id=uuids[j],
                    links=1,
                    bandwidth_gbps=gbps,
                    generation=row.link_generation if row is not None else None,
                )
            )
        numa = _opt(api.numa_node, i)
        bdf = _opt(api.bdf, i)
        name = str(info.get("market_name") or "")
        try:
            gpu = GPUFact(
                uuid=uuids[i],
                index=i,
                model=row.model if row is not None else (name or "AMD GPU"),
                memory_mib=vram if vram else (row.memory_mib if row is not None else None),
                pci_bus_id=normalize_bus_id(bdf) if bdf else None,
                numa_node=numa if numa is not None and numa >= 0 else None,
                nvlinks=links,
            )
        except ValueError as exc:
            inv.problems.append(f"GPU {i}: {exc}")
            continue
        inv.gpus.append(gpu)
    return inv
