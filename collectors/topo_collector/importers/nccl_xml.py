"""NCCL and RCCL topology XML: ``NCCL_TOPO_DUMP_FILE`` dumps, static PCI skeletons, multi-host dumps.

A dump nests ``<pci>`` elements under ``<cpu numaid>``: bridges (class 0x0604) are the PCIe
tree, a ``<pci>`` holding ``<gpu dev sm>`` is a GPU with ``<nvlink target count tclass>``
children (tclass 0x0680: an NVSwitch; 0x0302: a peer GPU), and one holding
``<nic><net name speed port guid>`` is a NIC with its ports (two ``<net>`` under one
``<nic>`` are two ports of one dual-port device). A static skeleton (Azure's files) has only
``<pci class>`` leaves: 0x0302 is a GPU, 0x0207/0x0200 a NIC. RCCL writes the same format
for AMD GPUs (``<gpu gcn="gfx942">``) with ``<xgmi target count>`` links, or an
``<xgmi><link target count bw/></xgmi>`` list.

The GPU's model, memory and link bandwidth come from its PCI vendor/device id (the
``vendor``/``device`` attributes, table ``topo_facts/gpu_models.csv``); the SM version only
names the architecture. A multi-node NVLink (MNNVL) dump holds one ``<cpu host_hash>`` set
per host: each becomes a host, named by the operator, and GPUs on different hosts linked
to the same NVLink fabric share one NVLink domain (an NVL72 rack is one domain).
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from topo_facts import (
    GPUFact,
    GPUNICAffinity,
    HostFacts,
    LinkLayer,
    NICFact,
    NUMANodeFact,
    NVLinkFact,
    NVSwitchFact,
    PCIeSwitchFact,
    PeerType,
    PortState,
)
from topo_facts.gpu_models import AMD, NVIDIA, GpuModel, by_model, by_pci

from topo_collector.derive import assign_rails, gpu_nic_affinity
from topo_collector.importers.common import (
    GBPS_PER_LINK,
    SM_ARCH,
    ImportOptions,
    ImportResult,
    compute_capability_of,
    imported_uuid,
    mask_to_cpulist,
    parse_xml,
    pcie_generation,
)

NVSWITCH_CLASS = 0x0680
GPU_CLASSES = (0x0302, 0x0300, 0x0380, 0x1200)  # 3D, VGA, other display, processing accelerator


def _class(el: ET.Element) -> int:
    try:
        return int(el.get("class", "0"), 16)
    except ValueError:
        return 0


def _int(value: str | None, default: int = 0) -> int:
    try:
        return int(value or "", 0) if value and value.lower().startswith("0x") else int(value or default)
    except ValueError:
        return default


@dataclass
class _Link:
    kind: str  # "nvlink" or "xgmi"
    target: str
    count: int
    tclass: int
    switch_id: str | None = None
    bw: float | None = None  # GB/s per link when the file says


@dataclass
class _Gpu:
    bus: str
    path: list[str]
    numa: int | None
    dev: int | None
    sm: int | None
    row: GpuModel | None
    vendor: str | None
    gcn: str | None = None
    links: list[_Link] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)  # graphsvc's own attributes, when present


@dataclass
class _Host:
    key: str
    numa_nodes: list[NUMANodeFact] = field(default_factory=list)
    switches: dict[str, PCIeSwitchFact] = field(default_factory=dict)
    gpus: list[_Gpu] = field(default_factory=list)
    nics: list[NICFact] = field(default_factory=list)


def parse_nccl_xml(text: str, opts: ImportOptions) -> HostFacts:
    """One host's facts; a multi-host dump needs parse_nccl_hosts (and host names)."""
    result = parse_nccl_hosts(text, opts)
    if len(result.hosts) != 1:
        raise ValueError(f"the file holds {len(result.hosts)} hosts; import it with host names for each")
    return result.hosts[0]


def parse_nccl_hosts(text: str, opts: ImportOptions) -> ImportResult:
    root = parse_xml(text)
    if root.tag != "system":
        raise ValueError("not an NCCL topology file: the root element is not <system>")
    hosts: dict[str, _Host] = {}
    for cpu in root.findall("cpu"):
        key = cpu.get("host_hash") or ""
        host = hosts.setdefault(key, _Host(key))
        numaid = _int(cpu.get("numaid"), 0)
        numa = numaid if numaid >= 0 else None  # NCCL writes -1 where the kernel does not know (VMs)
        affinity = cpu.get("affinity")
        if numa is not None and all(n.index != numa for n in host.numa_nodes):
            host.numa_nodes.append(NUMANodeFact(index=numa, cpus=mask_to_cpulist(affinity) if affinity else None))
        _walk(host, cpu, [], numa)
    if not hosts:
        hosts[""] = _Host("")
    names = opts.names_for(list(hosts))
    domains = _fabric_domains(list(hosts.values()), names, opts)
    warnings: list[str] = []
    facts = [
        _facts(opts, name, host, domains.get(name, {}), warnings)
        for name, host in zip(names, hosts.values(), strict=True)
    ]
    return ImportResult(facts, warnings)


def _walk(host: _Host, el: ET.Element, path: list[str], numa: int | None, downstream: bool = False) -> None:
    """`downstream`: `el` is a switch's downstream port, so a same-id bridge below it is the next chip."""
    for pci in el.findall("pci"):
        bus = pci.get("busid", "").lower()
        cls = _class(pci) >> 8
        gpu_el = pci.find("gpu")
        nic_el = pci.find("nic")
        vendor, device = pci.get("vendor"), pci.get("device")
        row = by_pci(vendor, device, pci.get("subsystem_device"))
        if cls == 0x0604 and not downstream and _same_chip(pci, el):
            # A downstream port of the switch chip whose upstream port is `el`: one switch, not two.
            _walk(host, pci, path, numa, downstream=True)
        elif cls == 0x0604:
            host.switches[bus] = PCIeSwitchFact(
                bus_id=bus,
                parent=path[0] if path else None,
                generation=pcie_generation(pci.get("link_speed")),
                width=_int(pci.get("link_width")) or None,
                numa_node=numa,
            )
            _walk(host, pci, [bus, *path], numa)
        elif gpu_el is not None or (cls in GPU_CLASSES and (row is not None or vendor is None or cls == 0x0302)):
            host.gpus.append(_gpu(pci, gpu_el, bus, list(path), numa, row))
        elif nic_el is not None or cls in (0x0207, 0x0200):
            host.nics.extend(_nics(pci, nic_el, bus, cls, list(path), numa))
        else:
            _walk(host, pci, path, numa)


def _same_chip(bridge: ET.Element, parent: ET.Element) -> bool:
    """Bridges with the same known vendor:device nested directly are the ports of one switch chip.

    A PCIe switch shows as an upstream port with a bridge per downstream port; counting each
    as a switch doubles the tree. Identical chips can cascade (DGX-2: upstream, downstream,
    upstream, downstream...), so only a bridge under an upstream port is a downstream port.
    Bridges without ids (static skeletons) stay as the file says.
    """
    ids = (bridge.get("vendor"), bridge.get("device"))
    return (
        parent.tag == "pci"
        and _class(parent) >> 8 == 0x0604
        and None not in ids
        and ids == (parent.get("vendor"), parent.get("device"))
    )


def _gpu(pci: ET.Element, gpu_el: ET.Element | None, bus: str, path: list[str], numa: int | None,
         row: GpuModel | None) -> _Gpu:  # fmt: skip
    vendor = row.vendor if row else (pci.get("vendor") or "").lower() or None
    gcn = gpu_el.get("gcn") if gpu_el is not None else None
    if gcn and vendor is None:
        vendor = AMD
    sm = _int(gpu_el.get("sm")) if gpu_el is not None else 0
    dev = _int(gpu_el.get("dev"), -1) if gpu_el is not None else -1
    g = _Gpu(bus, path, numa, dev if dev >= 0 else None, sm or None, row, vendor, gcn)
    if gpu_el is None:
        return g
    keep = ("uuid", "model", "memory_mib", "nic", "nic_via", "cluster_uuid", "clique_id")
    g.extra = {k: v for k, v in gpu_el.attrib.items() if k in keep}
    if g.row is None and g.extra.get("model"):  # graphsvc's own export names the model, not the PCI id
        g.row = by_model(g.extra["model"])
        g.vendor = g.row.vendor if g.row is not None else g.vendor
    for link in gpu_el.findall("nvlink"):
        g.links.append(
            _Link("nvlink", link.get("target", "").lower(), _int(link.get("count"), 1),
                  _int(link.get("tclass"), 0), link.get("switch_id"))
        )  # fmt: skip
    for x in gpu_el.findall("xgmi"):
        items = x.findall("link") or [x]
        for link in items:
            if link.get("target") is None:
                continue
            bw = link.get("bw")
            g.links.append(
                _Link("xgmi", link.get("target", "").lower(), _int(link.get("count"), 1),
                      _int(link.get("tclass"), 0), None, float(bw) if bw else None)
            )  # fmt: skip
    return g


def _nics(pci: ET.Element, nic_el: ET.Element | None, bus: str, cls: int, path: list[str],
          numa: int | None) -> list[NICFact]:  # fmt: skip
    layer = LinkLayer.INFINIBAND if cls == 0x0207 else LinkLayer.ETHERNET
    nets = nic_el.findall("net") if nic_el is not None else []
    if not nets:
        return [NICFact(name=f"nic@{bus}", pci_bus_id=bus, link_layer=layer, numa_node=numa, pcie_path=path)]
    out = []
    for net in nets:
        speed = _int(net.get("speed"))
        guid = net.get("guid")
        out.append(
            NICFact(
                name=net.get("name") or f"nic@{bus}/{net.get('port', '1')}",
                guid=guid if guid and guid.startswith("0x") and int(guid, 16) else None,
                pci_bus_id=bus,
                rate_gbps=speed / 1000 if speed else None,
                state=_state(net.get("state")),
                link_layer=layer,
                numa_node=numa,
                rail=int(net.get("rail", "")) if net.get("rail", "").isdigit() else None,
                pcie_path=path,
            )
        )
    return out


def _state(value: str | None) -> PortState:
    """NCCL lists a port only when its net plugin uses it (active); graphsvc's export says `state`
    for a port it knows to be otherwise."""
    try:
        return PortState(value) if value else PortState.ACTIVE
    except ValueError:
        return PortState.UNKNOWN


_PCI_ADDRESS = re.compile(r"^([0-9a-f]{4,8}):[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def _host_pci(switch_id: str) -> bool:
    """A switch id that is a real PCI address: an NVSwitch on the host's own board (HGX).

    Such ids repeat on every host of the same board design (each HGX has its NVSwitches at
    0000:1a-1d:00.0), so an equal id on two hosts says nothing about a shared fabric. NCCL
    writes a placeholder with an all-ones PCI domain (ffffffff:ff:1f.0) for the rack switches
    of a multi-node NVLink system, which a host cannot address; graphsvc's exports name rack
    switches in a `switch_id` attribute that is not a PCI address at all.
    """
    m = _PCI_ADDRESS.match(switch_id.lower())
    return m is not None and set(m.group(1)) != {"f"}


def _rack_switch(link: _Link) -> bool:
    """An NVLink to a switch outside the host (NVL72's rack NVSwitch trays)."""
    return not _host_pci(link.switch_id or link.target)


def _fabric_domains(hosts: list[_Host], names: list[str], opts: ImportOptions) -> dict[str, dict[str, str]]:
    """host -> GPU bus -> NVLink domain, for GPUs on a multi-node NVLink fabric.

    Only real evidence of a shared fabric puts GPUs of several hosts into one domain: a GPU
    that reports its fabric (cluster uuid + clique id, as NVML does) is in that clique;
    GPUs whose NVLinks go to the same rack switch (an id that is no host PCI address,
    _rack_switch) from different hosts are on one fabric; `--nvlink-domain` names the domain
    outright, e.g. to join trays imported one file at a time. On-board NVSwitches (PCI-addressed)
    never join hosts: NCCL also puts ordinary HGX hosts of one job into one dump, each with the
    same switch bus ids, and fusing them would offer 16 GPUs full-mesh across two boxes.
    """
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    seen_on: dict[str, set[int]] = {}
    for i, host in enumerate(hosts):
        for g in host.gpus:
            if g.extra.get("cluster_uuid") and g.extra.get("clique_id"):
                out[names[i]][g.bus] = f"{g.extra['cluster_uuid']}/{g.extra['clique_id']}"
            for link in g.links:
                if link.kind == "nvlink" and link.tclass >> 8 == NVSWITCH_CLASS and _rack_switch(link):
                    seen_on.setdefault(link.switch_id or link.target, set()).add(i)
    # Hosts joined by a shared switch id form one fabric (union-find over host positions).
    parent = list(range(len(hosts)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for on in seen_on.values():
        first, *rest = sorted(on)
        for other in rest:
            parent[find(other)] = find(first)
    groups: dict[int, list[int]] = {}
    for i in range(len(hosts)):
        groups.setdefault(find(i), []).append(i)
    for members in groups.values():
        if len(members) < 2 and not opts.nvlink_domain:
            continue
        key = "|".join(sorted(hosts[i].key or names[i] for i in members))
        domain = opts.nvlink_domain or f"{opts.cluster}/nvlink-fabric/{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        for i in members:
            for g in hosts[i].gpus:
                # An explicit domain takes every switched GPU; a found fabric only those on a rack switch.
                switched = any(
                    x.kind == "nvlink" and x.tclass >> 8 == NVSWITCH_CLASS and (opts.nvlink_domain or _rack_switch(x))
                    for x in g.links
                )
                if switched:
                    out[names[i]].setdefault(g.bus, domain)
    return out


def _model(g: _Gpu, opts: ImportOptions) -> str:
    if opts.gpu_model:
        return opts.gpu_model
    if g.extra.get("model"):
        return g.extra["model"]
    if g.row is not None:
        return g.row.model
    if g.vendor == AMD:
        return f"AMD GPU ({g.gcn})" if g.gcn else "AMD GPU"
    arch = SM_ARCH.get(g.sm or 0)
    if arch is not None:
        return f"NVIDIA {arch[0]} GPU (sm_{g.sm})"
    return "NVIDIA GPU" if g.vendor in (None, NVIDIA) else f"GPU (PCI vendor {g.vendor})"


def _memory(g: _Gpu, opts: ImportOptions) -> int | None:
    """From the PCI id's row; with --gpu-model, from that model's row (unknown when it has none)."""
    if opts.gpu_model:
        named = by_model(opts.gpu_model)
        return named.memory_mib if named is not None else None
    return g.row.memory_mib if g.row is not None else None


def _compute_capability(g: _Gpu, model: str) -> str | None:
    """The file's SM when it has one (NVIDIA's: RCCL writes gfx numbers there), else the model's."""
    if g.vendor == AMD:
        return None
    if g.sm and g.sm < 1000:
        return f"{g.sm // 10}.{g.sm % 10}"
    return compute_capability_of(model)


def _link_gbps(g: _Gpu) -> tuple[int | None, float | None]:
    """Generation and GB/s of one link: the PCI id's row, else the SM's NVLink generation."""
    if g.row is not None and g.row.link is not None:
        return g.row.link_generation, g.row.link_gbps
    if g.vendor == AMD or g.sm is None:
        return None, None
    gen = SM_ARCH.get(g.sm, ("", None))[1]
    return gen, GBPS_PER_LINK.get(gen or 0)


def _facts(opts: ImportOptions, name: str, host: _Host, fabric: dict[str, str], warnings: list[str]) -> HostFacts:
    ordered = sorted(host.gpus, key=lambda g: (g.dev if g.dev is not None else 1 << 16, g.bus))
    uuid_by_bus = {g.bus: g.extra.get("uuid") or imported_uuid(name, g.bus) for g in ordered}
    uuid_by_dev = {str(g.dev): uuid_by_bus[g.bus] for g in ordered if g.dev is not None}
    nvswitches: dict[str, NVSwitchFact] = {}
    facts: list[GPUFact] = []
    unknown_bw: set[str] = set()
    for index, g in enumerate(ordered):
        generation, per_link = _link_gbps(g)
        links: list[NVLinkFact] = []
        for link in g.links:
            gbps = link.bw if link.bw is not None and g.row is None else per_link
            if gbps is None:
                unknown_bw.add(link.kind)
            total = link.count * (gbps or 0.0)
            if link.kind == "nvlink" and link.tclass >> 8 == NVSWITCH_CLASS:
                sid = link.switch_id or link.target
                rack = _rack_switch(link)  # an on-board switch stays the host's, in a domain or not
                nvswitches.setdefault(
                    sid, NVSwitchFact(id=sid, pci_bus_id=None if rack else sid, location="rack" if rack else "host")
                )
                links.append(NVLinkFact(peer_type=PeerType.NVSWITCH, peer_id=sid, links=link.count,
                                        bandwidth_gbps=total, generation=generation))  # fmt: skip
                continue
            peer = uuid_by_bus.get(link.target) or (uuid_by_dev.get(link.target) if link.kind == "xgmi" else None)
            if peer is not None and peer != uuid_by_bus[g.bus]:
                links.append(NVLinkFact(peer_type=PeerType.GPU, peer_id=peer, links=link.count,
                                        bandwidth_gbps=total, generation=generation))  # fmt: skip
        memory = g.extra.get("memory_mib", "")
        model = _model(g, opts)
        facts.append(
            GPUFact(
                uuid=uuid_by_bus[g.bus],
                index=index,
                model=model,
                memory_mib=int(memory) if memory.isdigit() else _memory(g, opts),
                pci_bus_id=g.bus,
                numa_node=g.numa,
                compute_capability=_compute_capability(g, model),
                nvlinks=links,
                pcie_path=g.path,
                nvlink_domain=fabric.get(g.bus),
            )
        )
    _warn(name, host, ordered, facts, unknown_bw, opts, warnings)
    nics = assign_rails(facts, host.nics)
    return opts.host_facts(
        hostname=name,
        numa_nodes=sorted(host.numa_nodes, key=lambda n: n.index),
        gpus=facts,
        nvswitches=sorted(nvswitches.values(), key=lambda s: s.id),
        pcie_switches=sorted(host.switches.values(), key=lambda s: s.bus_id),
        nics=nics,
        gpu_nic_affinity=_affinity(ordered, facts, nics),
    )


def _warn(name: str, host: _Host, raw: list[_Gpu], facts: list[GPUFact], unknown_bw: set[str],
          opts: ImportOptions, warnings: list[str]) -> None:  # fmt: skip
    """Say what the file does not tell, instead of guessing it."""
    if len(raw) > 1 and not any(g.links for g in raw):
        warnings.append(
            f"{name}: the file has no <nvlink> or <xgmi> entries, so NVLink/xGMI links are unknown and the "
            f"host imports as PCIe-only (a full NCCL_TOPO_DUMP_FILE dump taken on the host lists them)"
        )
    if not opts.gpu_model and raw and any(g.row is None and "model" not in g.extra for g in raw):
        models = sorted({f.model for f, g in zip(facts, raw, strict=True) if g.row is None})
        warnings.append(
            f"{name}: GPU model not identified (no known PCI device id in the file): recorded as "
            f"{', '.join(models)} with memory unknown; pass --gpu-model to name it"
        )
    if unknown_bw:
        warnings.append(f"{name}: {'/'.join(sorted(unknown_bw))} bandwidth unknown for this GPU model (recorded as 0)")


def _affinity(raw: list[_Gpu], facts: list[GPUFact], nics: list[NICFact]) -> list[GPUNICAffinity]:
    """The file's own GPU-NIC pairing when it carries one (graphsvc exports do), else derived."""
    named = {n.name for n in nics}
    given = [
        GPUNICAffinity(gpu_uuid=f.uuid, nic=g.extra["nic"], via=g.extra.get("nic_via", "numa"))
        for g, f in zip(raw, facts, strict=True)
        if g.extra.get("nic") in named
    ]
    return given if given else gpu_nic_affinity(facts, nics)
