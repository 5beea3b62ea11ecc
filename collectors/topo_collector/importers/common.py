"""Helpers shared by the importers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from topo_facts import HostFacts

from topo_collector import __version__

# GPU architecture by CUDA SM version: model family, NVLink generation.
SM_FAMILY = {
    60: ("NVIDIA Tesla P100", 1),
    70: ("NVIDIA Tesla V100", 2),
    80: ("NVIDIA A100", 3),
    86: ("NVIDIA A10/A40", 3),
    89: ("NVIDIA L40S/L4", None),
    90: ("NVIDIA H100", 4),
    100: ("NVIDIA B200", 5),
    103: ("NVIDIA B300", 5),
}
# Bidirectional GB/s per NVLink lane by generation (see topo_collector.nvml).
GBPS_PER_LINK = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0}


@dataclass
class ImportOptions:
    host: str
    cluster: str = "default"
    rack: str | None = None
    scalable_unit: str | None = None
    gpu_model: str | None = None
    collected_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def collector_version(self) -> str:
        return f"topo-collector/{__version__} import"

    def host_facts(self, **parts: Any) -> HostFacts:
        """HostFacts for this host and location, from the parts an importer found."""
        return HostFacts(
            hostname=self.host,
            cluster=self.cluster,
            rack=self.rack,
            scalable_unit=self.scalable_unit,
            collected_at=self.collected_at,
            collector_version=self.collector_version,
            **parts,
        )


def imported_uuid(host: str, key: str) -> str:
    """Files like NCCL XML carry no GPU uuid; this one is stable for a host and slot."""
    return f"GPU-imported-{host}-{key}"


def mask_to_cpulist(mask: str) -> str:
    """'0000ffff,ffffffff' (32-bit words, most significant first) -> '0-47'."""
    words = [w for w in re.split(r"[,\s]+", mask.strip().lower().removeprefix("0x")) if w]
    value = 0
    for w in words:
        value = (value << 32) | int(w, 16)
    cpus = [i for i in range(value.bit_length()) if value >> i & 1]
    return compress_cpus(cpus)


def compress_cpus(cpus: list[int]) -> str:
    ranges: list[str] = []
    start = prev = None
    for c in cpus:
        if start is None:
            start = prev = c
        elif prev is not None and c == prev + 1:
            prev = c
        else:
            ranges.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = c
    if start is not None:
        ranges.append(f"{start}-{prev}" if start != prev else f"{start}")
    return ",".join(ranges)


def pcie_generation(link_speed: str | None) -> int | None:
    if not link_speed:
        return None
    match = re.match(r"\s*([\d.]+)", link_speed)
    if not match:
        return None
    gts = float(match.group(1))
    for gen, speed in ((6, 64.0), (5, 32.0), (4, 16.0), (3, 8.0), (2, 5.0), (1, 2.5)):
        if gts >= speed * 0.9:
            return gen
    return None
