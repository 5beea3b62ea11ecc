"""NCCL topology XML for one host, from the graph: what NCCL_TOPO_FILE reads.

The PCIe tree nests switches under the CPU (NUMA node) they hang off; GPUs carry their SM
version and NVLinks (tclass 0x068000 to an NVSwitch, 0x030200 to a peer GPU; AMD GPUs' links
to peers are `<xgmi>`, as RCCL writes them); NICs carry
their ports. NCCL ignores attributes it does not know, so graphsvc adds a few (`uuid`,
`model`, `memory_mib`, `nic`, `nic_via` on GPUs, `rail` on NIC ports, `switch_id` on NVLinks) that let
`topo-collector import` read the same host facts back.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import replace

from topo_facts.gpu_models import vendor_of

from graphsvc.read.hosts import HostTopology, NVLinkEdge

_NO_BUS = "ffff:ff:{:02x}.0"
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}


def _mask(cpulist: str | None) -> str | None:
    if not cpulist:
        return None
    bits = 0
    for part in cpulist.split(","):
        lo, _, hi = part.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            bits |= 1 << cpu
    words = []
    while bits:
        words.append(f"{bits & 0xFFFFFFFF:08x}")
        bits >>= 32
    return ",".join(reversed(words)) or "00000000"


def nccl_xml(topo: HostTopology) -> str:
    """Pure: the XML for one host from its topology (graphsvc.read.hosts)."""
    layout = topo.layout
    switches = {s.bus_id: s for s in layout.pcie_switches}
    attach = layout.attachments
    numa_cpus = {n.index: n.cpus for n in layout.numa}
    gpus = topo.gpus
    bus_of = {g.uuid: g.pci_bus_id for g in gpus}
    links: dict[str, list[NVLinkEdge]] = defaultdict(list)
    for e in topo.nvlinks:
        links[e.uuid].append(e)
        if e.peer_kind == "GPU":  # stored once per pair; NCCL lists it on both GPUs
            links[e.peer].append(replace(e, uuid=e.peer, peer=e.uuid))
    affinity = {a.gpu: a for a in topo.affinity}
    nvswitch_bus: dict[str, str] = {}

    root = ET.Element("system", version="1")
    cpus: dict[int, ET.Element] = {}

    def cpu(numa: int | None) -> ET.Element:
        key = numa if numa is not None else 0
        if key not in cpus:
            attrs = {"numaid": str(key), "arch": "x86_64"}
            mask = _mask(numa_cpus.get(key))
            if mask:
                attrs["affinity"] = mask
            cpus[key] = ET.SubElement(root, "cpu", attrs)
        return cpus[key]

    placed: dict[str, ET.Element] = {}

    def switch(bus: str) -> ET.Element:
        if bus in placed:
            return placed[bus]
        s = switches[bus]
        parent = switch(s.parent) if s.parent in switches else cpu(s.numa_node)
        attrs = {"busid": bus, "class": "0x060400"}
        if s.generation:
            attrs["link_speed"] = f"{PCIE_GTS.get(s.generation, 32.0):.1f} GT/s PCIe"
        if s.width:
            attrs["link_width"] = str(s.width)
        placed[bus] = ET.SubElement(parent, "pci", attrs)
        return placed[bus]

    for g in gpus:
        if not g.pci_bus_id:
            continue
        under = attach.get(g.uuid)
        parent = switch(under) if under is not None and under in switches else cpu(g.numa_node)
        pci = ET.SubElement(parent, "pci", {"busid": g.pci_bus_id, "class": "0x030200"})
        cc = (g.compute_capability or "0.0").split(".")
        attrs = {"dev": str(g.index), "sm": str(int(cc[0]) * 10 + int(cc[1])), "rank": str(g.index),
                 "gdr": "1", "uuid": g.uuid, "model": g.model}  # fmt: skip
        if g.memory_mib is not None:
            attrs["memory_mib"] = str(g.memory_mib)
        if g.index in affinity:
            attrs["nic"] = affinity[g.index].nic
            attrs["nic_via"] = str(affinity[g.index].via)
        el = ET.SubElement(pci, "gpu", attrs)
        amd = vendor_of(g.model) == "amd"  # RCCL lists GPU-GPU links as <xgmi>, same attributes
        for e in sorted(links[g.uuid], key=lambda e: e.peer):
            if e.peer_kind == "GPU":
                target, tclass, switch_id = bus_of.get(e.peer), "0x030200", None
            else:
                switch_id = e.peer.split("/nvswitch/", 1)[-1]
                if switch_id not in nvswitch_bus:
                    looks_like_bus = len(switch_id.split(":")) == 3
                    nvswitch_bus[switch_id] = switch_id if looks_like_bus else _NO_BUS.format(len(nvswitch_bus))
                target, tclass = nvswitch_bus[switch_id], "0x068000"
            if target is None:
                continue
            attrs = {"target": target, "count": str(e.links), "tclass": tclass}
            if switch_id is not None and switch_id != target:
                attrs["switch_id"] = switch_id
            ET.SubElement(el, "xgmi" if amd and e.peer_kind == "GPU" else "nvlink", attrs)
    for k, n in enumerate(topo.nics):
        bus = n.pci_bus_id or _NO_BUS.format(0x80 + k)
        under = attach.get(n.name)
        parent = switch(under) if under is not None and under in switches else cpu(n.numa_node)
        cls = "0x020700" if n.link_layer == "infiniband" else "0x020000"
        pci = ET.SubElement(parent, "pci", {"busid": bus, "class": cls})
        nic = ET.SubElement(pci, "nic")
        attrs = {"name": n.name, "dev": str(k), "port": "1", "gdr": "1"}
        if n.rate_gbps:
            attrs["speed"] = str(int(n.rate_gbps * 1000))
        if n.guid:
            attrs["guid"] = n.guid
        if n.rail is not None:
            attrs["rail"] = str(n.rail)
        ET.SubElement(nic, "net", attrs)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
