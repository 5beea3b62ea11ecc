"""`amd-smi topology` and `rocm-smi --showtopo` text: AMD GPUs, their xGMI links, NUMA nodes.

Both print GPU-by-GPU tables. rocm-smi titles them between rows of '=' ("Link Type between
two GPUs", "Numa Nodes") and labels rows GPU0..; amd-smi titles them "LINK TYPE TABLE:"
and labels rows by PCI address (or GPU index). A cell "XGMI" is one xGMI link between the
pair. The text names no model: pass --gpu-model (e.g. "AMD Instinct MI300X") and the GPU
table gives memory and per-link bandwidth; without it both stay unknown.
"""

from __future__ import annotations

import re

from topo_facts import GPUFact, NUMANodeFact, NVLinkFact, PeerType
from topo_facts.gpu_models import by_model

from topo_collector.importers.common import ImportOptions, ImportResult, imported_uuid

_TITLE = re.compile(r"^\s*=+\s*(.+?)\s*=+\s*$|^\s*([A-Z][A-Z ]+TABLE):\s*$")
_BDF = re.compile(r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_NUMA = re.compile(r"^GPU\[(\d+)\]\s*:\s*\(Topology\) Numa Node:\s*(\d+)", re.IGNORECASE)


def _label(text: str) -> str:
    m = re.fullmatch(r"GPU\[?(\d+)\]?", text, re.IGNORECASE)
    return m.group(1) if m else text.lower()


def _tables(text: str) -> dict[str, list[list[str]]]:
    tables: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in text.splitlines():
        m = _TITLE.match(line)
        if m:
            title = (m.group(1) or m.group(2) or "").lower()
            current = tables.setdefault(title, [])
            continue
        if current is not None and line.strip():
            current.append(line.split())
    return tables


def parse_amd_topo(text: str, opts: ImportOptions) -> ImportResult:
    if "ROCm System Management Interface" in text and "End of ROCm SMI Log" not in text:
        # rocm-smi ends its output with this line: without it the tables after the cut (the NUMA
        # nodes, last) would be missing without a word.
        raise ValueError("the rocm-smi output has no 'End of ROCm SMI Log' line: is it truncated?")
    tables = _tables(text)
    link_rows = next((rows for title, rows in tables.items() if "link type" in title), None)
    if not link_rows or len(link_rows) < 2:
        raise ValueError("no GPU link type table (`rocm-smi --showtopo` or `amd-smi topology`) found")
    header = [_label(h) for h in link_rows[0]]
    rows = {_label(r[0]): r[1:] for r in link_rows[1:] if len(r) == len(header) + 1}
    if set(rows) != set(header):
        raise ValueError("the link type table is not square: is the output truncated?")
    numa: dict[str, int] = {}
    for line in text.splitlines():
        m = _NUMA.match(line.strip())
        if m:
            numa[m.group(1)] = int(m.group(2))
    # A Numa Nodes table that lists some of the GPUs but not all is a cut file (rocm-smi prints
    # every GPU): refused, not imported with the rest on no node.
    indices = [str(i) for i in range(len(header))]
    if numa and set(numa) != set(indices):
        missing = [i for i in indices if i not in numa]
        raise ValueError(
            f"the Numa Nodes table lists {len(numa)} of {len(header)} GPUs "
            f"(not GPU[{'], GPU['.join(missing[:4])}]{', ...' if len(missing) > 4 else ''}): is the output truncated?"
        )
    row = by_model(opts.gpu_model) if opts.gpu_model else None
    per_link = row.link_gbps if row is not None else None
    buses = {label: label for label in header if _BDF.match(label)}
    uuid = {label: imported_uuid(opts.host, buses.get(label, f"gpu{i}")) for i, label in enumerate(header)}
    gpus = []
    for i, label in enumerate(header):
        links = [
            NVLinkFact(
                peer_type=PeerType.GPU,
                peer_id=uuid[peer],
                links=1,
                bandwidth_gbps=per_link or 0.0,
                generation=row.link_generation if row is not None else None,
            )
            for peer, cell in zip(header, rows[label], strict=True)
            if peer != label and cell.upper() == "XGMI"
        ]
        bus = buses.get(label)
        gpus.append(
            GPUFact(
                uuid=uuid[label],
                index=i,
                model=opts.gpu_model or "AMD GPU",
                memory_mib=row.memory_mib if row is not None else None,
                pci_bus_id=f"0000:{bus}" if bus and bus.count(":") == 1 else bus,
                numa_node=numa.get(label),
                nvlinks=links,
            )
        )
    warnings = []
    if row is None:
        warnings.append(
            f"{opts.host}: the text names no GPU model: pass --gpu-model (e.g. 'AMD Instinct MI300X') for "
            "memory and xGMI bandwidth (recorded as unknown / 0)"
        )
    if not any(g.nvlinks for g in gpus) and len(gpus) > 1:
        warnings.append(f"{opts.host}: no XGMI cell in the link type table: the GPUs import as PCIe-only")
    facts = opts.host_facts(
        numa_nodes=[NUMANodeFact(index=n) for n in sorted(set(numa.values()))],
        gpus=gpus,
    )
    return ImportResult([facts], warnings)
