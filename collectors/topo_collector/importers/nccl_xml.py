"""NCCL topology XML: full ``NCCL_TOPO_DUMP_FILE`` dumps and static PCI skeletons.

A dump nests ``<pci>`` elements under ``<cpu numaid>``: bridges (class 0x0604) are PCIe
switches, a ``<pci>`` holding ``<gpu dev sm>`` is a GPU with ``<nvlink target count
tclass>`` children (tclass 0x0680: an NVSwitch; 0x0302: a peer GPU), and one holding
``<nic><net name speed port guid>`` is an HCA with its ports. A static skeleton (Azure's
files) has only ``<pci class>`` leaves: 0x0302 is a GPU, 0x0207/0x0200 a NIC.
"""

from __future__ import annotations

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

from topo_collector.derive import assign_rails, gpu_nic_affinity
from topo_collector.importers.common import (
    GBPS_PER_LINK,
    SM_FAMILY,
    ImportOptions,
    imported_uuid,
    mask_to_cpulist,
    pcie_generation,
)


def _class(el: ET.Element) -> int:
    try:
        return int(el.get("class", "0"), 16)
    except ValueError:
        return 0


@dataclass
class _Gpu:
    bus: str
    path: list[str]
    numa: int | None
    dev: int | None
    sm: int | None
    links: list[tuple[str, int, int, str | None]] = field(default_factory=list)  # target, count, tclass, id
    extra: dict[str, str] = field(default_factory=dict)  # graphsvc's own attributes, when present


def parse_nccl_xml(text: str, opts: ImportOptions) -> HostFacts:
    root = ET.fromstring(text)  # noqa: S314 - ElementTree does not expand external entities
    if root.tag != "system":
        raise ValueError("not an NCCL topology file: the root element is not <system>")
    numa_nodes: list[NUMANodeFact] = []
    switches: dict[str, PCIeSwitchFact] = {}
    gpus: list[_Gpu] = []
    nics: list[NICFact] = []

    def walk(el: ET.Element, path: list[str], numa: int | None) -> None:
        for pci in el.findall("pci"):
            bus = pci.get("busid", "").lower()
            cls = _class(pci)
            gpu_el = pci.find("gpu")
            nic_el = pci.find("nic")
            if cls >> 8 == 0x0604:
                switches[bus] = PCIeSwitchFact(
                    bus_id=bus,
                    parent=path[0] if path else None,
                    generation=pcie_generation(pci.get("link_speed")),
                    width=int(pci.get("link_width", "0")) or None,
                    numa_node=numa,
                )
                walk(pci, [bus, *path], numa)
            elif gpu_el is not None or cls >> 8 in (0x0302, 0x0300):
                sm = int(gpu_el.get("sm", "0")) if gpu_el is not None else 0
                dev = int(gpu_el.get("dev", "-1")) if gpu_el is not None else -1
                g = _Gpu(bus, list(path), numa, dev if dev >= 0 else None, sm or None)
                if gpu_el is not None:
                    keep = ("uuid", "model", "memory_mib", "nic", "nic_via")
                    g.extra = {k: v for k, v in gpu_el.attrib.items() if k in keep}
                for link in gpu_el.findall("nvlink") if gpu_el is not None else []:
                    g.links.append(
                        (
                            link.get("target", "").lower(),
                            int(link.get("count", "1")),
                            int(link.get("tclass", "0"), 16),
                            link.get("switch_id"),
                        )
                    )
                gpus.append(g)
            elif nic_el is not None or cls >> 8 in (0x0207, 0x0200):
                layer = LinkLayer.INFINIBAND if cls >> 8 == 0x0207 else LinkLayer.ETHERNET
                nets = nic_el.findall("net") if nic_el is not None else []
                if not nets:
                    nics.append(
                        NICFact(
                            name=f"nic@{bus}",
                            pci_bus_id=bus,
                            link_layer=layer,
                            numa_node=numa,
                            pcie_path=list(path),
                        )
                    )
                for net in nets:
                    speed = int(net.get("speed", "0") or 0)
                    guid = net.get("guid")
                    nics.append(
                        NICFact(
                            name=net.get("name") or f"nic@{bus}/{net.get('port', '1')}",
                            guid=guid if guid and guid.startswith("0x") and int(guid, 16) else None,
                            pci_bus_id=bus,
                            rate_gbps=speed / 1000 if speed else None,
                            state=PortState.ACTIVE,
                            link_layer=layer,
                            numa_node=numa,
                            rail=int(net.get("rail", "")) if net.get("rail", "").isdigit() else None,
                            pcie_path=list(path),
                        )
                    )
            else:
                walk(pci, path, numa)

    for cpu in root.findall("cpu"):
        numa = int(cpu.get("numaid", "0"))
        affinity = cpu.get("affinity")
        numa_nodes.append(NUMANodeFact(index=numa, cpus=mask_to_cpulist(affinity) if affinity else None))
        walk(cpu, [], numa)
    return _facts(opts, numa_nodes, switches, gpus, nics)


def _facts(
    opts: ImportOptions,
    numa_nodes: list[NUMANodeFact],
    switches: dict[str, PCIeSwitchFact],
    gpus: list[_Gpu],
    nics: list[NICFact],
) -> HostFacts:
    ordered = sorted(gpus, key=lambda g: (g.dev if g.dev is not None else 1 << 16, g.bus))
    uuid_by_bus = {g.bus: g.extra.get("uuid") or imported_uuid(opts.host, g.bus) for g in ordered}
    nvswitches: dict[str, NVSwitchFact] = {}
    facts: list[GPUFact] = []
    for index, g in enumerate(ordered):
        family, generation = SM_FAMILY.get(g.sm or 0, ("NVIDIA GPU", None))
        per_link = GBPS_PER_LINK.get(generation or 0, 50.0)
        links: list[NVLinkFact] = []
        for target, count, tclass, switch_id in g.links:
            if tclass >> 8 == 0x0680:
                sid = switch_id or target
                rack = switch_id is not None
                nvswitches.setdefault(
                    sid, NVSwitchFact(id=sid, pci_bus_id=None if rack else target, location="rack" if rack else "host")
                )
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.NVSWITCH,
                        peer_id=sid,
                        links=count,
                        bandwidth_gbps=count * per_link,
                        generation=generation,
                    )
                )
            elif target in uuid_by_bus and target != g.bus:
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.GPU,
                        peer_id=uuid_by_bus[target],
                        links=count,
                        bandwidth_gbps=count * per_link,
                        generation=generation,
                    )
                )
        facts.append(
            GPUFact(
                uuid=uuid_by_bus[g.bus],
                index=index,
                model=opts.gpu_model or g.extra.get("model") or family,
                memory_mib=int(g.extra["memory_mib"]) if g.extra.get("memory_mib", "").isdigit() else None,
                pci_bus_id=g.bus,
                numa_node=g.numa,
                compute_capability=f"{g.sm // 10}.{g.sm % 10}" if g.sm else None,
                nvlinks=links,
                pcie_path=g.path,
            )
        )
    nics = assign_rails(facts, nics)
    return opts.host_facts(
        numa_nodes=numa_nodes,
        gpus=facts,
        nvswitches=sorted(nvswitches.values(), key=lambda s: s.id),
        pcie_switches=sorted(switches.values(), key=lambda s: s.bus_id),
        nics=nics,
        gpu_nic_affinity=_affinity(ordered, facts, nics),
    )


def _affinity(raw: list[_Gpu], facts: list[GPUFact], nics: list[NICFact]) -> list[GPUNICAffinity]:
    """The file's own GPU-NIC pairing when it carries one (graphsvc exports do), else derived."""
    named = {n.name for n in nics}
    given = [
        GPUNICAffinity(gpu_uuid=f.uuid, nic=g.extra["nic"], via=g.extra.get("nic_via", "numa"))
        for g, f in zip(raw, facts, strict=True)
        if g.extra.get("nic") in named
    ]
    return given if given else gpu_nic_affinity(facts, nics)
