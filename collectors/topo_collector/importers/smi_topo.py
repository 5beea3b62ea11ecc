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

from topo_collector.importers.common import GBPS_PER_LINK, ImportOptions, imported_uuid

_DEVICE = re.compile(r"^(GPU|NIC|mlx5_)\d+")
_NV = re.compile(r"^NV(\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


# Terminal escapes: nvidia-smi underlines its header (``ESC[4m ... ESC[0m``) even when its output
# goes to a pipe or a file, as captured on a real H200 (driver 580). Also stripped: any other CSI
# (colon-form colours ``ESC[38:5:1m``), OSC titles and links, charset shifts (``ESC(B``, as tput's
# sgr0 writes), and two-byte escapes, so a dump that went through a terminal or a logger parses too.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])")


def _clean_lines(text: str) -> list[str]:
    """Lines without escapes, a BOM or carriage returns (``\\r\\r\\n`` must not make a blank line,
    which ends the matrix)."""
    return _ANSI.sub("", text.lstrip("\ufeff").replace("\r", "")).splitlines()


def parse_smi_topo(text: str, opts: ImportOptions, link_generation: int | None = None) -> HostFacts:
    lines = _clean_lines(text)
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        raise ValueError("no `nvidia-smi topo -m` header (a line starting with GPU0) found")
    header = lines[header_at].split()
    devices = [h for h in header if _DEVICE.match(h)]
    legend = {m.group(1): m.group(2) for line in lines if (m := _LEGEND.match(line))}
    rows: dict[str, list[str]] = {}
    extra: dict[str, list[str]] = {}
    for line in lines[header_at + 1 :]:
        parts = line.split()
        if not parts or not _DEVICE.match(parts[0]):
            if rows and not line.strip():
                break
            continue
        rows[parts[0]] = parts[1 : 1 + len(devices)]
        extra[parts[0]] = parts[1 + len(devices) :]
    gpu_names = [d for d in devices if d.startswith("GPU")]
    # A header GPU without a full row means a cut or garbled matrix: refuse it rather than import
    # a GPU with no NVLinks and no NUMA node, which would place jobs on it wrongly.
    for name in gpu_names:
        if len(rows.get(name, [])) < len(devices):
            raise ValueError(
                f"`nvidia-smi topo -m`: the header names {name} but its row is "
                + ("missing" if name not in rows else f"cut short ({len(rows[name])} of {len(devices)} cells)")
            )
    nic_names = [d for d in devices if not d.startswith("GPU")]
    row = by_model(opts.gpu_model) if opts.gpu_model else None
    if row is not None and row.link_gbps:
        link_generation = link_generation or row.link_generation
        per_link = row.link_gbps
    else:
        per_link = GBPS_PER_LINK.get(link_generation or 0, 50.0)
    numa_cpus: dict[int, str] = {}
    gpus: list[GPUFact] = []
    for name in gpu_names:
        index = int(name[3:])
        cells = rows.get(name, [])
        links = []
        for peer, cell in zip(devices, cells, strict=False):
            nv = _NV.match(cell)
            if nv and peer.startswith("GPU") and peer != name:
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
        cpus, numa = _affinity(extra.get(name, []))
        if numa is not None and cpus:
            numa_cpus.setdefault(numa, cpus)
        gpus.append(
            GPUFact(
                uuid=imported_uuid(opts.host, f"gpu{index}"),
                index=index,
                model=opts.gpu_model or "NVIDIA GPU",
                memory_mib=row.memory_mib if row is not None else None,
                numa_node=numa,
                nvlinks=links,
            )
        )
    nics = [NICFact(name=legend.get(n, n)) for n in nic_names]
    affinity: list[GPUNICAffinity] = []
    rank = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
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


def _affinity(cols: list[str]) -> tuple[str | None, int | None]:
    """Trailing columns: CPU Affinity, NUMA Affinity[, GPU NUMA ID]; 'N/A' where unknown."""
    cpus = cols[0] if cols and re.match(r"^[\d,\-]+$", cols[0]) else None
    numa = int(cols[1]) if len(cols) > 1 and cols[1].isdigit() else None
    return cpus, numa
