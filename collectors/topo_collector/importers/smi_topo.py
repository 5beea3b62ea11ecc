"""``nvidia-smi topo -m`` text: the GPU/NIC connection matrix with CPU and NUMA affinity.

Cells: ``NV<n>`` (n NVLink lanes between the pair), ``PIX`` (one PCIe switch), ``PXB``
(several switches), ``PHB`` (the host bridge), ``NODE`` (across host bridges of one NUMA
node), ``SYS`` (across NUMA nodes). The matrix carries no uuids or bus ids: GPUs get
stable imported ids; the NIC legend (``NIC0: mlx5_0``) gives NIC names.
"""

from __future__ import annotations

import re

from topo_facts import GPUFact, GPUNICAffinity, HostFacts, NICFact, NUMANodeFact, NVLinkFact, PeerType
from topo_facts.gpu_models import by_model

from topo_collector.importers.common import GBPS_PER_LINK, ImportOptions, compute_capability_of, imported_uuid

# A matrix cell: self, NVLink lanes, or a PCIe distance (SOC: old drivers' name for SYS).
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
_GPU = re.compile(r"^GPU\d+$")
_NV = re.compile(r"^NV(\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_LEGEND_TITLE = re.compile(r"^\s*(Legend:|X\s+=\s+Self)")
# The headings after the device columns; each has one cell in a GPU's row ("N/A" when unknown).
_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


# Terminal escapes: nvidia-smi underlines its header (``ESC[4m ... ESC[0m``) even when its output
# goes to a pipe or a file, as captured on a real H200 (driver 580). Also stripped: any other CSI
# (colon-form colours ``ESC[38:5:1m``), OSC titles and links, charset shifts (``ESC(B``, as tput's
# sgr0 writes), and two-byte escapes, so a dump that went through a terminal or a logger parses too.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])")


def _clean_lines(text: str) -> list[str]:
    """Lines without escapes, a BOM or NULs, whatever ended them: ``\\r\\n``, ``\\r\\r\\n`` (a CRLF file
    copied in text mode; the extra ``\\r`` must not make a blank line, which ends the matrix) or a
    lone ``\\r`` (old Mac files)."""
    text = _ANSI.sub("", text.lstrip("\ufeff").replace("\x00", ""))
    return re.sub(r"\r+\n", "\n", text).replace("\r", "\n").split("\n")


def _header_at(lines: list[str]) -> int | None:
    """The header: its first field is GPU0 and its second is no matrix cell (the GPU0 row's is
    ``X`` or a distance). Leading whitespace is not required: captures are often stripped."""
    for i, line in enumerate(lines):
        parts = line.split()
        if parts and parts[0] == "GPU0" and (len(parts) == 1 or not _CELL.match(parts[1])):
            return i
    return None


def _columns(header: str) -> tuple[list[str], list[str]]:
    """The device columns (every name before the first trailing heading: GPUs, ``NIC<n>``, and the
    NIC's own name on older drivers, ``mlx4_0``, ``bnxt_re0``, ``mlx5_bond_0``) and the trailing
    headings, in their order: a GPU's row has one cell for each."""
    cut = min((at for h in _TRAILING if (at := header.find(h)) >= 0), default=len(header))
    devices = header[:cut].split()
    if len(set(devices)) != len(devices):
        raise ValueError("`nvidia-smi topo -m`: the header names a device twice")
    return devices, sorted((h for h in _TRAILING if h in header[cut:]), key=header.find)


def _matrix(lines: list[str], header_at: int, devices: list[str], trailing: int) -> dict[str, list[str]]:
    """Each device's row (its cells after the name), checked: a GPU's row has a cell for every
    device and every trailing heading, each device cell is a topo -m cell and its own is ``X``.
    A cut, garbled or misaligned row is refused with its name, never imported shifted (a cell
    read as the next column gave a GPU no NUMA node and the wrong NIC)."""
    rows: dict[str, list[str]] = {}
    for line in lines[header_at + 1 :]:
        parts = line.split()
        if not parts:
            if rows:
                break
            continue
        if parts[0] in devices:
            rows[parts[0]] = parts[1:]
    width = len(devices)
    for name in devices:
        cells = rows.get(name)
        if cells is None:
            raise ValueError(f"`nvidia-smi topo -m`: the header names {name} but its row is missing")
        if not _GPU.match(name):
            continue  # a NIC's row: read for nothing but its presence (the matrix is whole)
        if len(cells) < width + trailing:
            raise ValueError(
                f"`nvidia-smi topo -m`: the header names {name} but its row has {len(cells)} of "
                f"{width + trailing} cells (cut short, or two cells run together)"
            )
        bad = next((c for c in cells[:width] if not _CELL.match(c)), None)
        if bad is not None or cells[devices.index(name)] != "X":
            raise ValueError(
                f"`nvidia-smi topo -m`: {name}'s row is garbled"
                + (f" ({bad!r} is no topo -m cell)" if bad is not None else " (its own cell is not X)")
            )
    return rows


def _legend(lines: list[str], nic_columns: list[str], warnings: list[str], ends_cleanly: bool) -> dict[str, str]:
    """NIC names from the legend (``NIC0: mlx5_0``). A legend that names some NICs but not all,
    one name twice, or none after the cell legend is a cut file: refused. No legend at all (a
    pasted matrix) keeps the column names, with a warning: those are not the host's NIC names."""
    entries = [(i, m.group(1), m.group(2)) for i, line in enumerate(lines) if (m := _LEGEND.match(line))]
    legend = {nic: name for _, nic, name in entries}
    numbered = [n for n in nic_columns if re.fullmatch(r"NIC\d+", n)]
    missing = [n for n in numbered if n not in legend]
    if numbered and missing and legend:
        raise ValueError(
            f"`nvidia-smi topo -m`: the NIC legend names {len(numbered) - len(missing)} of {len(numbered)} NICs "
            f"(not {', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}): is the file cut?"
        )
    if missing and not legend and any(_LEGEND_TITLE.match(line) for line in lines):
        # nvidia-smi prints the NIC legend after the cell legend: a file that has the one but not
        # the other was cut between them.
        raise ValueError("`nvidia-smi topo -m`: the file has the cell legend but no NIC legend: is the file cut?")
    if missing and not legend:
        warnings.append(
            f"no NIC legend: {len(missing)} NIC(s) keep their column names ({missing[0]}, ...), "
            "not the host's NIC names"
        )
    names = [legend.get(n, n) for n in nic_columns]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ValueError(f"`nvidia-smi topo -m`: the NIC legend names {twice} twice: is the file cut?")
    last = max(i for i, line in enumerate(lines) if line.strip())
    if entries and not ends_cleanly and entries[-1][0] == last:
        _, nic, name = entries[-1]
        warnings.append(f"the file ends inside the NIC legend: {nic}'s name {name!r} may be cut")
    return legend


def parse_smi_topo(
    text: str, opts: ImportOptions, link_generation: int | None = None, warnings: list[str] | None = None
) -> HostFacts:
    """One host's facts from ``nvidia-smi topo -m``; what the text could not say is added to
    `warnings` when given."""
    warnings = [] if warnings is None else warnings
    lines = _clean_lines(text)
    header_at = _header_at(lines)
    if header_at is None:
        raise ValueError("no `nvidia-smi topo -m` header (a line starting with GPU0) found")
    devices, headings = _columns(lines[header_at])
    rows = _matrix(lines, header_at, devices, len(headings))
    extra = {name: cells[len(devices) :] for name, cells in rows.items()}
    nic_columns = [d for d in devices if not _GPU.match(d)]
    legend = _legend(lines, nic_columns, warnings, text.rstrip("\x00").endswith(("\n", "\r")))
    gpu_names = [d for d in devices if _GPU.match(d)]
    nic_names = nic_columns
    row = by_model(opts.gpu_model) if opts.gpu_model else None
    if row is not None and row.link_gbps:
        link_generation = link_generation or row.link_generation
        per_link = row.link_gbps
    else:
        per_link = GBPS_PER_LINK.get(link_generation or 0, 50.0)
    numa_cpus: dict[int, str | None] = {}
    gpus: list[GPUFact] = []
    for name in gpu_names:
        index = int(name[3:])
        cells = rows.get(name, [])
        links = []
        for peer, cell in zip(devices, cells, strict=False):
            nv = _NV.match(cell)
            if nv and _GPU.match(peer) and peer != name:
                count = int(nv.group(1))
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.GPU,
                        peer_id=imported_uuid(opts.host, f"gpu{peer[3:]}"),
                        links=count,
                        bandwidth_gbps=count * per_link,
                        generation=link_generation,
                    )
                )
        cpus, numa = _affinity(dict(zip(headings, extra.get(name, []), strict=False)))
        if numa is not None and numa_cpus.get(numa) is None:
            numa_cpus[numa] = cpus  # a node whose CPUs are unknown (N/A) is still a node
        gpus.append(
            GPUFact(
                uuid=imported_uuid(opts.host, f"gpu{index}"),
                index=index,
                model=opts.gpu_model or "NVIDIA GPU",
                memory_mib=row.memory_mib if row is not None else None,
                compute_capability=compute_capability_of(opts.gpu_model),
                numa_node=numa,
                nvlinks=links,
            )
        )
    if gpus and not opts.gpu_model:
        # The matrix never names the model: say so, as the NCCL importer does, rather than
        # record a generic model silently (placement matches GPUs by model).
        warnings.append(
            "GPU model not identified (`nvidia-smi topo -m` does not name it): recorded as "
            "NVIDIA GPU with memory unknown; pass --gpu-model to name it"
        )
    nics = [NICFact(name=legend.get(n, n)) for n in nic_names]
    affinity: list[GPUNICAffinity] = []
    rank = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}
    taken: dict[str, int] = {}
    for name, gpu in zip(gpu_names, gpus, strict=True):
        # Nearest first; among equally near NICs the one serving fewest GPUs so far (not always the first).
        best: tuple[int, int, int, str] | None = None
        for order, (peer, cell) in enumerate(zip(devices, rows.get(name, []), strict=False)):
            if peer in nic_names and cell in rank:
                nic = legend.get(peer, peer)
                cand = (rank[cell], taken.get(nic, 0), order, nic)
                if best is None or cand < best:
                    best = cand
        if best is not None:
            taken[best[3]] = taken.get(best[3], 0) + 1
            via = "pcie-switch" if best[0] <= 1 else "numa" if best[0] <= 3 else "host"
            affinity.append(GPUNICAffinity(gpu_uuid=gpu.uuid, nic=best[3], via=via))
    return opts.host_facts(
        numa_nodes=[NUMANodeFact(index=n, cpus=c) for n, c in sorted(numa_cpus.items())],
        gpus=gpus,
        nics=nics,
        gpu_nic_affinity=affinity,
    )


def _affinity(cells: dict[str, str]) -> tuple[str | None, int | None]:
    """A GPU's CPU list and NUMA node from its trailing cells by heading; 'N/A' where unknown."""
    cpus = cells.get("CPU Affinity", "")
    numa = cells.get("NUMA Affinity", "")
    return (cpus if re.match(r"^[\d,\-]+$", cpus) else None), (int(numa) if numa.isdigit() else None)
