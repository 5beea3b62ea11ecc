"""Assembles one host's facts from NVML and sysfs; never fails for want of a GPU driver."""

from __future__ import annotations

import logging
import re
import socket
from datetime import UTC, datetime

from topo_facts import HostFacts, LinkLayer, NICFact, NUMANodeFact, PCIeSwitchFact, PortState

from topo_collector import __version__
from topo_collector.amd import AmdInventory, read_amdsmi
from topo_collector.amdsmi_api import AMDSMI_NOT_INSTALLED, AmdSmiApi, AmdSmiError, RealAmdSmi
from topo_collector.derive import assign_rails, gpu_nic_affinity
from topo_collector.nvml import GpuIdentities, NvmlInventory, read_nvml
from topo_collector.nvml_api import NvmlApi, NvmlError, RealNvml
from topo_collector.sysfs import SysfsInventory, read_sysfs

log = logging.getLogger(__name__)

_PORT_STATES = {
    "active": PortState.ACTIVE,
    "down": PortState.DOWN,
    "init": PortState.INIT,
    "up": PortState.ACTIVE,
}


def local_hostname() -> str:
    name = socket.gethostname().split(".")[0]
    return re.sub(r"[^A-Za-z0-9._-]", "-", name).lstrip("-._") or "localhost"


def nvml_inventory(
    nv: NvmlApi | None = None, *, known: GpuIdentities | None = None, host: str | None = None
) -> NvmlInventory | None:
    """NVML's view, or None with one clear log line when there is no NVIDIA driver.

    Only a failure of NVML itself (init, device count) means "no driver": a GPU that fails
    alone is reported failed by read_nvml and the other GPUs as usual.
    """
    try:
        return read_nvml(nv if nv is not None else RealNvml(), known=known, host=host or local_hostname())
    except NvmlError as exc:
        log.warning(
            "NVIDIA driver not available (NVML error %d: %s): reporting host, NUMA, PCI and NICs only",
            exc.code,
            exc,
        )
        return None


def amd_inventory(api: AmdSmiApi | None = None) -> AmdInventory | None:
    """AMD SMI's view where the amdsmi package is installed, else None (quietly: most hosts are NVIDIA)."""
    try:
        return read_amdsmi(api if api is not None else RealAmdSmi())
    except AmdSmiError as exc:
        level = logging.DEBUG if exc.code == AMDSMI_NOT_INSTALLED else logging.WARNING
        log.log(level, "AMD SMI not available (%s): no AMD GPUs reported", exc)
        return None


def nics_from_sysfs(sysfs: SysfsInventory) -> list[NICFact]:
    nics: list[NICFact] = []
    covered: set[str] = set()
    multi_port = {p.device for p in sysfs.ib if p.port > 1}
    for port in sysfs.ib:
        covered.update(port.netdevs)
        pci = sysfs.pci.get(port.pci_bus_id or "")
        nics.append(
            NICFact(
                name=f"{port.device}:{port.port}" if port.device in multi_port else port.device,
                netdev=port.netdevs[0] if port.netdevs else None,
                guid=port.guid,
                pci_bus_id=port.pci_bus_id,
                rate_gbps=port.rate_gbps,
                state=_PORT_STATES.get(port.state, PortState.UNKNOWN),
                link_layer=LinkLayer.ETHERNET if port.link_layer == "ethernet" else LinkLayer.INFINIBAND,
                numa_node=pci.numa_node if pci else None,
                pcie_path=sysfs.bridges_above(port.pci_bus_id) if port.pci_bus_id else [],
                symbol_errors=port.symbol_errors,
                link_downed=port.link_downed,
                port_rcv_errors=port.port_rcv_errors,
            )
        )
    for net in sysfs.net:
        if net.pci_bus_id is None or net.name in covered:
            continue  # virtual devices (lo, bridges, veth) and HCA netdevs already reported
        pci = sysfs.pci.get(net.pci_bus_id)
        nics.append(
            NICFact(
                name=net.name,
                netdev=net.name,
                pci_bus_id=net.pci_bus_id,
                rate_gbps=net.speed_mbps / 1000 if net.speed_mbps else None,
                state=_PORT_STATES.get(net.operstate or "", PortState.UNKNOWN),
                link_layer=LinkLayer.ETHERNET,
                numa_node=pci.numa_node if pci else None,
                pcie_path=sysfs.bridges_above(net.pci_bus_id),
            )
        )
    return nics


def build_host_facts(
    hostname: str,
    nvml: NvmlInventory | None,
    sysfs: SysfsInventory,
    *,
    cluster: str = "default",
    rack: str | None = None,
    scalable_unit: str | None = None,
    collected_at: datetime | None = None,
    amd: AmdInventory | None = None,
) -> HostFacts:
    numa_ids = {n.index for n in sysfs.numa}
    # With one NUMA node every device is local to it, whatever sysfs says: a VM or a one-socket
    # host reports numa_node -1 (seen on a real H200 VM, where nvidia-smi gives NUMA affinity 0).
    only_node = next(iter(numa_ids)) if len(numa_ids) == 1 else None

    def on_node(reported: int | None) -> int | None:
        """A device's node: as reported if the host has it (or sysfs lists no nodes at all, as in
        some containers, where the report is all there is), else the one node, else unknown."""
        if reported is not None and (not numa_ids or reported in numa_ids):
            return reported
        return only_node

    gpus = []
    found = list(nvml.gpus if nvml else [])
    # AMD GPUs (if any) follow the NVIDIA ones in index order.
    found += [g.model_copy(update={"index": len(found) + k}) for k, g in enumerate(amd.gpus if amd else [])]
    for gpu in found:
        path = sysfs.bridges_above(gpu.pci_bus_id) if gpu.pci_bus_id else []
        numa = gpu.numa_node
        if numa is None and gpu.pci_bus_id in sysfs.pci:
            numa = sysfs.pci[gpu.pci_bus_id].numa_node
        numa = on_node(numa)
        gpus.append(gpu.model_copy(update={"pcie_path": path, "numa_node": numa}))
    nics = nics_from_sysfs(sysfs)
    # Only a NIC with a PCI function sits on a node (a soft-RoCE device has none).
    nics = [n.model_copy(update={"numa_node": on_node(n.numa_node) if n.pci_bus_id else None}) for n in nics]
    bridges: dict[str, PCIeSwitchFact] = {}
    for path in [g.pcie_path for g in gpus] + [n.pcie_path for n in nics]:
        for depth, bus in enumerate(path):
            if bus not in bridges:
                pci = sysfs.pci.get(bus)
                numa = on_node(pci.numa_node if pci else None)
                parent = path[depth + 1] if depth + 1 < len(path) else None
                bridges[bus] = PCIeSwitchFact(bus_id=bus, parent=parent, numa_node=numa)
    nics = assign_rails(gpus, nics)
    numa_nodes = [NUMANodeFact(index=n.index, cpus=n.cpus or None, memory_mib=n.memory_mib) for n in sysfs.numa]
    if not numa_nodes:
        # No node list (a container hiding /sys/devices/system/node): the nodes the devices report
        # are nodes too, so the graph links each device to its node (its CPUs and memory unknown).
        reported = [g.numa_node for g in gpus] + [n.numa_node for n in nics] + [b.numa_node for b in bridges.values()]
        numa_nodes = [NUMANodeFact(index=n) for n in sorted({n for n in reported if n is not None})]
    driver = f" nvidia-driver/{nvml.driver_version}" if nvml and nvml.driver_version else ""
    return HostFacts(
        hostname=hostname,
        cluster=cluster,
        rack=rack,
        scalable_unit=scalable_unit,
        collected_at=collected_at or datetime.now(UTC),
        collector_version=f"topo-collector/{__version__}{driver}",
        cpu_model=sysfs.cpu_model,
        numa_nodes=numa_nodes,
        gpus=gpus,
        nvswitches=nvml.nvswitches if nvml else [],
        pcie_switches=sorted(bridges.values(), key=lambda s: s.bus_id),
        nics=nics,
        gpu_nic_affinity=gpu_nic_affinity(gpus, nics),
    )


def collect(
    hostname: str | None = None,
    *,
    nv: NvmlApi | None = None,
    amd: AmdSmiApi | None = None,
    cluster: str = "default",
    rack: str | None = None,
    scalable_unit: str | None = None,
) -> HostFacts:
    """One full collection cycle on this machine."""
    hostname = hostname or local_hostname()
    return build_host_facts(
        hostname,
        nvml_inventory(nv, host=hostname),
        read_sysfs(),
        cluster=cluster,
        rack=rack,
        scalable_unit=scalable_unit,
        amd=amd_inventory(amd),
    )
