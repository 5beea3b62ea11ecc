"""Importers for topology formats operators already have, producing the same HostFacts as a collector."""

from __future__ import annotations

from pathlib import Path

from topo_facts import HostFacts

from topo_collector.importers.amd_topo import parse_amd_topo
from topo_collector.importers.common import ImportOptions, ImportResult, read_topology_file
from topo_collector.importers.hwloc_xml import parse_hwloc_xml
from topo_collector.importers.nccl_xml import parse_nccl_hosts, parse_nccl_xml
from topo_collector.importers.smi_topo import parse_smi_topo

FORMATS = ("nccl", "hwloc", "nvidia-smi-topo", "amd-topo")


def detect_format(text: str) -> str:
    head = text.lstrip("\ufeff").lstrip()[:4096]
    if head.startswith("<?xml") or head.startswith("<"):
        if "<topology" in head or "hwloc" in head[:300]:
            return "hwloc"
        return "nccl"
    if "ROCm System Management Interface" in head or "LINK TYPE TABLE" in text or "Link Type between" in text:
        return "amd-topo"
    if "GPU0" in head:
        return "nvidia-smi-topo"
    raise ValueError(
        "unrecognised format: expected NCCL/RCCL topology XML, hwloc XML, `nvidia-smi topo -m`, "
        "`amd-smi topology` or `rocm-smi --showtopo` text"
    )


def import_hosts(path: Path, opts: ImportOptions, fmt: str | None = None) -> ImportResult:
    """Every host the file describes (an MNNVL NCCL dump holds several), with warnings."""
    text = read_topology_file(path)
    kind = fmt or detect_format(text)
    if kind == "nccl":
        return parse_nccl_hosts(text, opts)
    warnings: list[str] = []
    if kind == "hwloc":
        return ImportResult([parse_hwloc_xml(text, opts, warnings)], warnings)
    if kind == "nvidia-smi-topo":
        facts = parse_smi_topo(text, opts, warnings=warnings)
        return ImportResult([facts], [f"{opts.host}: {w}" for w in warnings])
    if kind == "amd-topo":
        return parse_amd_topo(text, opts)
    raise ValueError(f"unknown format {kind!r}")


def import_file(path: Path, opts: ImportOptions, fmt: str | None = None) -> HostFacts:
    """The one host a file describes (a multi-host file needs import_hosts)."""
    result = import_hosts(path, opts, fmt)
    if len(result.hosts) != 1:
        raise ValueError(f"{path} holds {len(result.hosts)} hosts; use import_hosts with host names")
    return result.hosts[0]


__all__ = [
    "FORMATS",
    "ImportOptions",
    "ImportResult",
    "detect_format",
    "import_file",
    "import_hosts",
    "parse_amd_topo",
    "parse_hwloc_xml",
    "parse_nccl_hosts",
    "parse_nccl_xml",
    "parse_smi_topo",
]
