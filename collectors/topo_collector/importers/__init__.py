"""Importers for topology formats operators already have, producing the same HostFacts as a collector."""

from __future__ import annotations

from pathlib import Path

from topo_facts import HostFacts

from topo_collector.importers.common import ImportOptions
from topo_collector.importers.hwloc_xml import parse_hwloc_xml
from topo_collector.importers.nccl_xml import parse_nccl_xml
from topo_collector.importers.smi_topo import parse_smi_topo


def detect_format(text: str) -> str:
    head = text.lstrip()[:4096]
    if head.startswith("<?xml") or head.startswith("<"):
        if "<topology" in head or "hwloc" in head[:300]:
            return "hwloc"
        return "nccl"
    if "GPU0" in head:
        return "nvidia-smi-topo"
    raise ValueError("unrecognised format: expected NCCL topology XML, hwloc XML or `nvidia-smi topo -m` text")


def import_file(path: Path, opts: ImportOptions, fmt: str | None = None) -> HostFacts:
    text = path.read_text(encoding="utf-8", errors="replace")
    kind = fmt or detect_format(text)
    if kind == "nccl":
        return parse_nccl_xml(text, opts)
    if kind == "hwloc":
        return parse_hwloc_xml(text, opts)
    if kind == "nvidia-smi-topo":
        return parse_smi_topo(text, opts)
    raise ValueError(f"unknown format {kind!r}")


__all__ = [
    "ImportOptions",
    "detect_format",
    "import_file",
    "parse_hwloc_xml",
    "parse_nccl_xml",
    "parse_smi_topo",
]
