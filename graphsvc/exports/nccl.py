"""NCCL topology XML for one host, from the graph: what NCCL_TOPO_FILE reads.

The PCIe tree nests switches under the CPU (NUMA node) they hang off; GPUs carry their SM
version and NVLinks (tclass 0x068000 to an NVSwitch, 0x030200 to a peer GPU; AMD GPUs' links
to peers are `<xgmi>`, as RCCL writes them); NICs carry
their ports. NCCL ignores attributes it does not know, so graphsvc adds a few (`uuid`,
`model`, `memory_mib`, `nic`, `nic_via` on GPUs, `rail` and `state` on NIC ports, `switch_id` on
NVLinks) that let `topo-collector import` read the same host facts back.

NCCL takes an attribute that is present as the truth and fills in only those left out
(xml.cc, ncclTopoGetXmlFromGpu/Cpu/Sys): an `sm` of 0 turns off its NVML NVLink detection and
tunes for pre-Volta GPUs, an `arch` of x86_64 on a Grace host makes it demand an x86 CPU vendor.
So every NCCL attribute here is written only when the graph knows its value, never as a
placeholder. A host whose GPUs have no PCI bus id (an `nvidia-smi topo -m` import) has no NCCL
file at all: NCCL finds GPUs by bus id (`NcclExportError`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import replace

from topo_facts.gpu_models import AMD, NVIDIA, normalised, table, vendor_of

from graphsvc.placement.capabilities import capability_of, parse_cc
from graphsvc.read.hosts import HostTopology, NVLinkEdge, TopologyGpu, TopologyNic

_NO_BUS = "ffff:ff:{:02x}.0"
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}


class NcclExportError(ValueError):
    """The host's facts cannot make an NCCL topology file (render.py answers it as a 409)."""


def _sm(g: TopologyGpu) -> str | None:
    """NCCL's `sm` (major * 10 + minor): the GPU's own compute capability, else its model's
    (graphsvc.placement.capabilities); None, so the attribute is left out and NCCL asks the
    GPU itself, where neither knows it (an AMD GPU, an unknown model)."""
    cc: tuple[int, int] | None = None
    if g.compute_capability:
        try:
            cc = parse_cc(g.compute_capability)
        except ValueError:
            cc = None
    if cc is None:
        cap = capability_of(g.model) if g.model else None
        cc = cap.compute_capability if cap is not None else None
    return str(cc[0] * 10 + cc[1]) if cc is not None else None


def _pci_ids(model: str) -> dict[str, str]:
    """`vendor`/`device` (and `subsystem_device`) of the GPU's PCI function, from the model
    table (topo_facts/gpu_models.csv) when the model names exactly one id there; the vendor
    alone when only that is sure. The importer reads the model, memory and link bandwidth back
    from them."""
    rows = [r for r in table() if normalised(r.model) == normalised(model)]
    ids = {(r.vendor, r.device, r.subsystem) for r in rows}
    if len(ids) == 1:
        vendor, device, subsystem = ids.pop()
        out = {"vendor": vendor, "device": device}
        if subsystem:
            out["subsystem_device"] = subsystem
        return out
    known = {"nvidia": NVIDIA, "amd": AMD}.get(vendor_of(model) or "") if model else None
    return {"vendor": known} if known else {}


def _cpu_attrs(cpu_model: str | None) -> dict[str, str]:
    """`arch` (and x86's `vendor`) from the host's CPU model when it says; nothing otherwise, so
    NCCL fills them in from the host it runs on."""
    words = set((cpu_model or "").lower().replace("(r)", " ").split())
    if words & {"intel", "xeon"}:
        return {"arch": "x86_64", "vendor": "GenuineIntel"}
    if words & {"amd", "epyc"}:
        return {"arch": "x86_64", "vendor": "AuthenticAMD"}
    if words & {"grace", "neoverse", "aarch64", "arm64"}:
        return {"arch": "arm64"}
    if words & {"power8", "power9", "power10", "ppc64", "ppc64le"}:
        return {"arch": "ppc64"}
    return {}


def _bare_nic(n: TopologyNic) -> bool:
    """A NIC the graph knows only as a PCI function (a static skeleton's, as Azure ships them):
    written as the bare `<pci class>` it came from. NCCL lists a `<net>` only for a port its net
    plugin uses, and a made-up one beside the plugin's (older NCCL keeps both) is a second NIC."""
    unnamed = n.pci_bus_id is not None and n.name == f"nic@{n.pci_bus_id}"
    return unnamed and n.state != "active" and not n.rate_gbps and not n.guid


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
    """Pure: the XML for one host from its topology (graphsvc.read.hosts).

    Raises NcclExportError when a GPU has no PCI bus id: NCCL matches the file's GPUs to the
    devices it finds by bus id, so a file without them would hold no GPU (and no NUMA node)."""
    unplaced = [g.index for g in topo.gpus if not g.pci_bus_id]
    if unplaced:
        which = "its GPUs" if len(unplaced) == len(topo.gpus) else "GPU " + ", ".join(map(str, unplaced))
        raise NcclExportError(
            f"host {topo.name!r}: the PCI bus ids of {which} are unknown and NCCL finds GPUs by bus id; send "
            "its facts from a collector or importer that reads them (topo-collector on the host, an "
            "NCCL_TOPO_DUMP_FILE or hwloc import)"
        )
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
    cpu_attrs = _cpu_attrs(topo.header.cpu_model)
    cpus: dict[int, ET.Element] = {}

    def cpu(numa: int | None) -> ET.Element:
        """The `<cpu>` of a NUMA node; -1, as NCCL writes where the kernel does not say (VMs),
        for a device whose node is unknown: 0 would pin its proxy threads to node 0's CPUs."""
        key = numa if numa is not None else -1
        if key not in cpus:
            attrs = {"numaid": str(key), **cpu_attrs}
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

    # Every NUMA node and PCIe switch the graph knows, devices below or not: NCCL drops the empty
    # ones itself (ncclTopoTrimXml), and the importer reads the whole tree back.
    for node in layout.numa:
        cpu(node.index)
    for bus in sorted(switches):
        switch(bus)

    for g in gpus:
        if not g.pci_bus_id:
            continue  # refused above
        under = attach.get(g.uuid)
        parent = switch(under) if under is not None and under in switches else cpu(g.numa_node)
        pci = ET.SubElement(parent, "pci", {"busid": g.pci_bus_id, "class": "0x030200", **_pci_ids(g.model)})
        attrs = {"dev": str(g.index)}
        sm = _sm(g)
        if sm is not None:
            attrs["sm"] = sm
        attrs |= {"rank": str(g.index), "gdr": "1", "uuid": g.uuid, "model": g.model}
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
        if _bare_nic(n):
            continue
        nic = ET.SubElement(pci, "nic")
        attrs = {"name": n.name, "dev": str(k), "port": "1", "gdr": "1"}
        if n.rate_gbps:
            attrs["speed"] = str(int(n.rate_gbps * 1000))
        if n.guid:
            attrs["guid"] = n.guid
        if n.rail is not None:
            attrs["rail"] = str(n.rail)
        if n.state and n.state != "active":  # graphsvc's: NCCL's dumps list only ports in use
            attrs["state"] = n.state
        ET.SubElement(nic, "net", attrs)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
