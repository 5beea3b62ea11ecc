"""hwloc XML (``lstopo --of xml``): the PCI tree with NUMA locality, NVML GPUs, NVSwitches,
network devices, and the ``NVLinkBandwidth`` distance matrix hwloc records from NVML.

Bandwidths in that matrix are MB/s in one direction; a lane carries 25,000 MB/s on
NVLink 2-4 (20,000 on NVLink 1, 50,000 on NVLink 5), which gives the lane count.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from topo_facts import (
    GPUFact,
    HostFacts,
    LinkLayer,
    NICFact,
    NUMANodeFact,
    NVLinkFact,
    NVSwitchFact,
    PCIeSwitchFact,
    PeerType,
)
from topo_facts.gpu_models import by_pci

from topo_collector.derive import assign_rails, gpu_nic_affinity
from topo_collector.importers.common import (
    ImportOptions,
    compress_cpus,
    compute_capability_of,
    imported_uuid,
    parse_xml,
)

_MODEL_GEN = (("V100", 2), ("A100", 3), ("H100", 4), ("H200", 4), ("B200", 5), ("GB200", 5), ("P100", 1))
_LANE_MBPS = {1: 20_000, 2: 25_000, 3: 25_000, 4: 25_000, 5: 50_000}


@dataclass
class _State:
    numa: list[NUMANodeFact] = field(default_factory=list)
    switches: dict[str, PCIeSwitchFact] = field(default_factory=dict)
    gpus: dict[str, dict[str, object]] = field(default_factory=dict)  # gp_index -> info
    nvswitch_gp: dict[str, str] = field(default_factory=dict)  # gp_index -> bus id
    nics: list[NICFact] = field(default_factory=list)
    cpu_model: str | None = None


def _info(obj: ET.Element) -> dict[str, str]:
    return {i.get("name", ""): i.get("value", "") for i in obj.findall("info")}


def _mask_cpus(mask: str) -> str:
    words = mask.lower().split(",")
    value = 0
    for w in words:
        value = (value << 32) | int(w.removeprefix("0x") or "0", 16)
    return compress_cpus([i for i in range(value.bit_length()) if value >> i & 1])


def parse_hwloc_xml(text: str, opts: ImportOptions, warnings: list[str] | None = None) -> HostFacts:
    """One host's facts from hwloc XML; what the file could not say is added to `warnings`."""
    root = parse_xml(text)
    if root.tag != "topology":
        raise ValueError("not an hwloc XML file: the root element is not <topology>")
    st = _State()

    def walk(obj: ET.Element, numa: int | None, path: list[str], downstream: bool = False) -> None:
        children = obj.findall("object")
        local = [c for c in children if c.get("type") == "NUMANode"]
        if local:
            numa = int(local[0].get("os_index", "0"))
        for child in children:
            kind = child.get("type")
            if kind == "NUMANode":
                mem = int(child.get("local_memory", "0")) // (1024 * 1024) or None
                st.numa.append(
                    NUMANodeFact(
                        index=int(child.get("os_index", "0")),
                        cpus=_mask_cpus(child.get("cpuset", "0")),
                        memory_mib=mem,
                    )
                )
            elif kind == "Package":
                st.cpu_model = st.cpu_model or _info(child).get("CPUModel")
                walk(child, numa, path)
            elif kind == "Bridge":
                bus = child.get("pci_busid")
                if bus and not downstream and _chip(child) is not None and _chip(child) == _chip(obj):
                    walk(child, numa, path, downstream=True)  # a downstream port of `obj`'s switch chip
                elif bus:
                    st.switches[bus] = PCIeSwitchFact(bus_id=bus, parent=path[0] if path else None, numa_node=numa)
                    walk(child, numa, [bus, *path])
                else:
                    walk(child, numa, path)
            elif kind == "PCIDev":
                _pci_device(child, numa, path, st)
            else:
                walk(child, numa, path)

    walk(root, None, [])
    links = _nvlink_matrix(root, st)
    recorded = any(d.get("name") == "NVLinkBandwidth" for d in root.findall("distances2hetero"))
    if warnings is not None and len(st.gpus) > 1 and not recorded:
        # hwloc writes the matrix only when built with NVML, and skips NVLink versions it does not
        # know (hwloc's topology-nvml.c: NVLink 5, B200/GB200): the file cannot say the GPUs have none.
        warnings.append(
            f"{opts.host}: no NVLinkBandwidth matrix (hwloc without NVML, or an NVLink version it cannot "
            "read): the GPUs import as PCIe-only"
        )
    return _facts(opts, st, links)


def _chip(bridge: ET.Element) -> str | None:
    """The vendor:device of a bridge ('0604 [10b5:9781] ...' -> '10b5:9781'), None when not a PCI bridge."""
    m = re.search(r"\[([0-9a-f]{4}:[0-9a-f]{4})\]", bridge.get("pci_type") or "")
    return m.group(1) if m and bridge.get("type") == "Bridge" else None


def _pci_device(dev: ET.Element, numa: int | None, path: list[str], st: _State) -> None:
    bus = dev.get("pci_busid", "")
    pci_class = (dev.get("pci_type") or "0000")[:4]
    if dev.get("subtype") == "NVSwitch":
        st.nvswitch_gp[dev.get("gp_index", "")] = bus
        return
    for osdev in dev.findall("object"):
        if osdev.get("type") != "OSDev":
            continue
        name = osdev.get("name", "")
        info = _info(osdev)
        if name.startswith("nvml") or info.get("Backend") == "NVML":
            st.gpus[osdev.get("gp_index", "")] = {
                "index": int(re.sub(r"\D", "", name) or 0),
                "bus": bus,
                "numa": numa,
                "path": list(path),
                "uuid": info.get("NVIDIAUUID"),
                "model": info.get("GPUModel"),
                "ids": re.findall(r"\[([0-9a-f]{4}):([0-9a-f]{4})\]", dev.get("pci_type") or ""),
            }
        elif pci_class.startswith("02") and name:
            layer = LinkLayer.INFINIBAND if pci_class == "0207" else LinkLayer.ETHERNET
            if any(n.name == name for n in st.nics):
                continue
            guid = info.get("NodeGUID")
            st.nics.append(
                NICFact(
                    name=name,
                    pci_bus_id=bus,
                    numa_node=numa,
                    link_layer=layer,
                    pcie_path=list(path),
                    guid="0x" + guid.replace(":", "") if guid else None,
                )
            )


def _nvlink_matrix(root: ET.Element, st: _State) -> dict[str, dict[str, int]]:
    """gp_index of a GPU -> {gp_index of a peer: MB/s}."""
    out: dict[str, dict[str, int]] = {}
    for dist in root.findall("distances2hetero"):
        if dist.get("name") != "NVLinkBandwidth":
            continue
        n = int(dist.get("nbobjs", "0"))
        ids = " ".join(i.text or "" for i in dist.findall("indexes")).split()
        values = [int(v) for v in " ".join(v.text or "" for v in dist.findall("u64values")).split()]
        if len(ids) != n or len(values) != n * n:
            raise ValueError("NVLinkBandwidth matrix has the wrong size")
        gps = [i.split(":", 1)[1] for i in ids]
        for r, src in enumerate(gps):
            for c, dst in enumerate(gps):
                if values[r * n + c] and src != dst:
                    out.setdefault(src, {})[dst] = values[r * n + c]
    return out


def _facts(opts: ImportOptions, st: _State, matrix: dict[str, dict[str, int]]) -> HostFacts:
    ordered = sorted(st.gpus.items(), key=lambda kv: int(kv[1]["index"]))  # type: ignore[call-overload]
    uuid_of = {gp: str(info["uuid"] or imported_uuid(opts.host, str(info["bus"]))) for gp, info in ordered}
    nvswitches = {bus: NVSwitchFact(id=bus, pci_bus_id=bus) for bus in st.nvswitch_gp.values()}
    gpus: list[GPUFact] = []
    for gp, info in ordered:
        model = opts.gpu_model or str(info["model"] or "NVIDIA GPU")
        gen = next((g for key, g in _MODEL_GEN if key in model), None)
        lane = _LANE_MBPS.get(gen or 0, 25_000)
        links: list[NVLinkFact] = []
        for peer, mbps in sorted(matrix.get(gp, {}).items()):
            count = max(1, round(mbps / lane))
            gbps = 2 * mbps / 1000  # both directions
            if peer in st.nvswitch_gp:
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.NVSWITCH,
                        peer_id=st.nvswitch_gp[peer],
                        links=count,
                        bandwidth_gbps=gbps,
                        generation=gen,
                    )
                )
            elif peer in uuid_of:
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.GPU,
                        peer_id=uuid_of[peer],
                        links=count,
                        bandwidth_gbps=gbps,
                        generation=gen,
                    )
                )
        ids = list(info.get("ids") or [])  # type: ignore[call-overload]
        row = by_pci(f"0x{ids[0][0]}", f"0x{ids[0][1]}", f"0x{ids[1][1]}" if len(ids) > 1 else None) if ids else None
        gpus.append(
            GPUFact(
                uuid=uuid_of[gp],
                index=int(info["index"]),  # type: ignore[call-overload]
                model=model,
                memory_mib=row.memory_mib if row is not None and not opts.gpu_model else None,
                pci_bus_id=str(info["bus"]) or None,
                compute_capability=compute_capability_of(model),
                numa_node=info["numa"],
                nvlinks=links,
                pcie_path=info["path"],
            )
        )
    nics = assign_rails(gpus, st.nics)
    return opts.host_facts(
        cpu_model=st.cpu_model,
        numa_nodes=sorted(st.numa, key=lambda n: n.index),
        gpus=gpus,
        nvswitches=sorted(nvswitches.values(), key=lambda s: s.id),
        pcie_switches=sorted(st.switches.values(), key=lambda s: s.bus_id),
        nics=nics,
        gpu_nic_affinity=gpu_nic_affinity(gpus, nics),
    )
