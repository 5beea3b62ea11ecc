"""Helpers shared by the importers."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import defusedxml
import defusedxml.ElementTree as SafeET
from pydantic import ValidationError
from topo_facts import HostFacts
from topo_facts.gpu_models import family_of

from topo_collector import __version__

# The SM version names an architecture, never a model: sm_90 is an H100, H200, H800 or
# GH200; sm_103 a B300 or a GB300. The model comes from the PCI id (topo_facts.gpu_models)
# or the operator (--gpu-model); the SM only gives the NVLink generation of that family.
SM_ARCH = {
    60: ("Pascal", 1),
    70: ("Volta", 2),
    75: ("Turing", None),
    80: ("Ampere", 3),
    86: ("Ampere", 3),
    89: ("Ada", None),
    90: ("Hopper", 4),
    100: ("Blackwell", 5),
    103: ("Blackwell Ultra", 5),
}
# The other way round, a model does name its compute capability: every GPU of a family has
# the same one. NVIDIA families only (AMD's ISA is gfx9xx); graphsvc.placement.capabilities
# holds the same numbers for placement (tests/integration/test_nccl_export_facts.py keeps them
# equal).
COMPUTE_CAPABILITY = {
    "v100": "7.0",
    "v100s": "7.0",
    "a100": "8.0",
    "a10": "8.6",
    "a40": "8.6",
    "l4": "8.9",
    "l40": "8.9",
    "l40s": "8.9",
    "h100": "9.0",
    "h800": "9.0",
    "h200": "9.0",
    "b200": "10.0",
    "gb200": "10.0",
    "b300": "10.3",
    "gb300": "10.3",
}


def compute_capability_of(model: str | None) -> str | None:
    """The compute capability of a named model ("NVIDIA H100 80GB HBM3" -> "9.0"), for files
    that name the model (or --gpu-model does) but not the SM: NCCL's topology export writes it
    as `sm`, and tunes by it."""
    family = family_of(model) if model else None
    return COMPUTE_CAPABILITY.get(family) if family else None


# Bidirectional GB/s per NVLink lane by generation (see topo_collector.nvml).
GBPS_PER_LINK = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0}
MAX_IMPORT_BYTES = 16 * 1024 * 1024


def read_topology_file(path: Path, limit: int = MAX_IMPORT_BYTES) -> str:
    """The file's text, refusing one too large to be a topology dump (a one-line error)."""
    size = path.stat().st_size
    if size > limit:
        raise ValueError(f"{path}: {size} bytes is larger than the {limit} byte limit for a topology file")
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than the {limit} byte limit for a topology file")
    return decode_topology_bytes(data)


def decode_topology_bytes(data: bytes) -> str:
    """Text from a dump's bytes. A byte-order mark is honoured and dropped: Windows PowerShell's
    ``nvidia-smi topo -m > topo.txt`` writes UTF-16 with one, Notepad writes UTF-8 with one."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def parse_xml(text: str) -> ET.Element:
    """Parse XML with entity declarations and external references refused (defusedxml).

    A truncated or malformed file becomes a ValueError with one line saying so, never a
    traceback; a billion-laughs file is refused before any entity is expanded.
    """
    try:
        root: ET.Element = SafeET.fromstring(text, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as exc:
        raise ValueError(f"refused: the XML declares entities or external references ({type(exc).__name__})") from None
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed XML ({exc}); is the file truncated?") from None
    return root


@dataclass
class ImportResult:
    """The hosts a file describes, and what the file could not say (printed as warnings)."""

    hosts: list[HostFacts]
    warnings: list[str] = field(default_factory=list)


@dataclass
class ImportOptions:
    host: str
    cluster: str = "default"
    rack: str | None = None
    scalable_unit: str | None = None
    gpu_model: str | None = None
    collected_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Multi-host dumps (one NCCL XML of an NVL72 rack): host names, in the file's order,
    # from a list or a pattern ({n}: 1-based, {i}: 0-based position, {hash}: the host hash).
    host_names: list[str] | None = None
    host_pattern: str | None = None
    nvlink_domain: str | None = None  # name of the NVLink fabric domain these hosts share

    def names_for(self, hashes: list[str]) -> list[str]:
        """One host name per host section of the file."""
        if len(hashes) <= 1 and not self.host_names and not self.host_pattern:
            return [self.host]
        if self.host_names:
            if len(self.host_names) != len(hashes):
                raise ValueError(f"the file holds {len(hashes)} hosts but {len(self.host_names)} host names were given")
            return list(self.host_names)
        if self.host_pattern:
            try:
                names = [self.host_pattern.format(n=i + 1, i=i, hash=h) for i, h in enumerate(hashes)]
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"bad host pattern {self.host_pattern!r}: use {{n}}, {{i}} or {{hash}} ({exc})"
                ) from None
            if len(set(names)) != len(names):
                raise ValueError(f"host pattern {self.host_pattern!r} gives the same name to two hosts")
            return names
        raise ValueError(
            f"the file holds {len(hashes)} hosts (host_hash {', '.join(hashes)}): name them with --hosts a,b,... "
            "or --host-pattern 'rack1-tray{n:02d}'"
        )

    @property
    def collector_version(self) -> str:
        return f"topo-collector/{__version__} import"

    def host_facts(self, hostname: str | None = None, **parts: Any) -> HostFacts:
        """HostFacts for this host and location, from the parts an importer found. Facts that do
        not validate (a name twice, a link to nothing) are a ValueError of one line per problem,
        not pydantic's dump of the whole input."""
        try:
            return HostFacts(
                hostname=hostname or self.host,
                cluster=self.cluster,
                rack=self.rack,
                scalable_unit=self.scalable_unit,
                collected_at=self.collected_at,
                collector_version=self.collector_version,
                **parts,
            )
        except ValidationError as err:
            problems = "; ".join(_problem(e) for e in err.errors(include_url=False, include_input=False)[:5])
            raise ValueError(f"{hostname or self.host}: the file's facts are inconsistent: {problems}") from None


def _problem(error: Mapping[str, Any]) -> str:
    """One validation problem as a short phrase: where (unless a model check names it) and what."""
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    where = ".".join(str(part) for part in error.get("loc", ()))
    return f"{where}: {message}" if where else message


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
