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
    links: list[tuple[str, int, int]] = field(default_factory=list)  # target, count, tclass


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
                for link in gpu_el.findall("nvlink") if gpu_el is not None else []:
                    g.links.append(
                        (
                            link.get("target", "").lower(),
                            int(link.get("count", "1")),
                            int(link.get("tclass", "0"), 16),
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
    uuid_by_bus = {g.bus: imported_uuid(opts.host, g.bus) for g in ordered}
    nvswitches: dict[str, NVSwitchFact] = {}
    facts: list[GPUFact] = []
    for index, g in enumerate(ordered):
        family, generation = SM_FAMILY.get(g.sm or 0, ("NVIDIA GPU", None))
        per_link = GBPS_PER_LINK.get(generation or 0, 50.0)
        links: list[NVLinkFact] = []
        for target, count, tclass in g.links:
            if tclass >> 8 == 0x0680:
                nvswitches.setdefault(target, NVSwitchFact(id=target, pci_bus_id=target))
                links.append(
                    NVLinkFact(
                        peer_type=PeerType.NVSWITCH,
                        peer_id=target,
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
                model=opts.gpu_model or family,
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
        gpu_nic_affinity=gpu_nic_affinity(facts, nics),
    )
