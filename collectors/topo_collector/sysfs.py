"""Host facts from sysfs through pyudev: the PCI tree, NUMA, InfiniBand HCAs, network devices, CPUs.

pyudev enumerates devices (it reads sysfs through libudev, so no udev daemon is
needed); attributes that are not udev devices (IB ports, NUMA nodes) are read as
files below the device's sys path.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Imported where used (read_sysfs): without the package only a collection fails, not
    # `topo-collector import` or `--help`, which never read sysfs.
    import pyudev

log = logging.getLogger(__name__)

PCI_CLASS_BRIDGE_PCI = 0x0604
PCI_CLASS_NETWORK = 0x02


@dataclass(frozen=True)
class PciDevice:
    bus_id: str
    class_code: int  # 24-bit: base class, subclass, prog-if
    vendor: int
    device: int
    numa_node: int | None
    parent: str | None  # the upstream PCI device (a bridge), None below a host bridge
    driver: str | None

    @property
    def is_bridge(self) -> bool:
        return self.class_code >> 8 == PCI_CLASS_BRIDGE_PCI


@dataclass(frozen=True)
class NetDevice:
    name: str
    pci_bus_id: str | None
    operstate: str | None
    speed_mbps: int | None
    address: str | None


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    rate_gbps: float | None
    state: str
    link_layer: str
    guid: str | None
    pci_bus_id: str | None
    netdevs: tuple[str, ...]
    # Port error counters (ports/N/counters/*), None where the HCA does not expose them.
    symbol_errors: int | None = None
    link_downed: int | None = None
    port_rcv_errors: int | None = None


@dataclass(frozen=True)
class NumaNode:
    index: int
    cpus: str
    memory_mib: int | None


@dataclass
class SysfsInventory:
    pci: dict[str, PciDevice] = field(default_factory=dict)
    net: list[NetDevice] = field(default_factory=list)
    ib: list[IbPort] = field(default_factory=list)
    numa: list[NumaNode] = field(default_factory=list)
    cpu_model: str | None = None

    def bridges_above(self, bus_id: str) -> list[str]:
        """Bridge ancestors of a device, nearest first (its PCIe switch chain up to the root port).

        A switch chip shows as an upstream-port bridge with a bridge per downstream port, all
        with the chip's vendor:device: the downstream port is left out, so one chip is one switch.
        """
        out: list[str] = []
        cur = self.pci.get(bus_id)
        seen: set[str] = set()
        while cur is not None and cur.parent is not None and cur.parent not in seen:
            seen.add(cur.parent)
            parent = self.pci.get(cur.parent)
            if parent is None:
                break
            if parent.is_bridge and not self._downstream_port(parent):
                out.append(parent.bus_id)
            cur = parent
        return out

    def _downstream_port(self, bridge: PciDevice, depth: int = 0) -> bool:
        """Under an upstream port with the same ids; identical chips can cascade (up, down, up, down)."""
        up = self.pci.get(bridge.parent or "")
        same = up is not None and up.is_bridge and (up.vendor, up.device) == (bridge.vendor, bridge.device)
        return same and up is not None and depth < 16 and not self._downstream_port(up, depth + 1)


def _attr(device: pyudev.Device, name: str) -> str | None:
    try:
        value: str = device.attributes.asstring(name)
    except (KeyError, UnicodeDecodeError, OSError):
        return None
    return value.strip()


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def _numa(text: str | None) -> int | None:
    value = _int(text)
    return value if value is not None and value >= 0 else None


def read_file(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def read_sysfs(context: pyudev.Context | None = None, sys_root: Path = Path("/sys")) -> SysfsInventory:
    """The host's PCI tree, NICs, HCAs, NUMA nodes and CPU model.

    Without libudev (a slim container image, or one that cannot load) this refuses with a clear
    error rather than answer without the PCI tree: facts with no NICs would make the service
    delete the host's NICs and their fabric cables, which only a fabric import brings back.
    """
    inv = SysfsInventory()
    try:
        import pyudev
    except ImportError as exc:
        raise RuntimeError(
            f"cannot read the PCI tree: the pyudev package is not installed ({exc}); install it "
            "(pip install pyudev, or the topo-collector package with its dependencies)"
        ) from None
    try:
        ctx = context or pyudev.Context()
    except (ImportError, OSError) as exc:
        raise RuntimeError(
            f"cannot read the PCI tree: libudev is missing or cannot load ({exc}); install libudev1. "
            "Facts without it would remove this host's NICs and fabric cables from the graph"
        ) from None
    _read_devices(ctx, inv)
    inv.numa = read_numa(sys_root / "devices" / "system" / "node")
    inv.cpu_model = read_cpu_model()
    return inv


def _read_devices(ctx: pyudev.Context, inv: SysfsInventory) -> None:
    for dev in ctx.list_devices(subsystem="pci"):
        parent = dev.parent
        inv.pci[dev.sys_name] = PciDevice(
            bus_id=dev.sys_name,
            class_code=_int(_attr(dev, "class"), 16) or 0,
            vendor=_int(_attr(dev, "vendor"), 16) or 0,
            device=_int(_attr(dev, "device"), 16) or 0,
            numa_node=_numa(_attr(dev, "numa_node")),
            parent=parent.sys_name if parent is not None and parent.subsystem == "pci" else None,
            driver=dev.driver,
        )
    for dev in ctx.list_devices(subsystem="net"):
        pci = dev.find_parent("pci")
        speed = _int(_attr(dev, "speed"))
        inv.net.append(
            NetDevice(
                name=dev.sys_name,
                pci_bus_id=pci.sys_name if pci is not None else None,
                operstate=_attr(dev, "operstate"),
                speed_mbps=speed if speed is not None and speed > 0 else None,
                address=_attr(dev, "address"),
            )
        )
    for dev in ctx.list_devices(subsystem="infiniband"):
        inv.ib.extend(read_ib_device(Path(dev.sys_path)))


_RATE = re.compile(r"([\d.]+)\s*Gb/sec")


def read_ib_device(path: Path) -> list[IbPort]:
    """One entry per port of an HCA directory like /sys/class/infiniband/mlx5_0."""
    guid_text = read_file(path / "node_guid")
    guid = "0x" + guid_text.replace(":", "") if guid_text else None
    pci_link = path / "device"
    pci_bus_id = pci_link.resolve().name if pci_link.exists() else None
    netdevs = tuple(sorted(p.name for p in (path / "device" / "net").glob("*"))) if pci_link.exists() else ()
    ports: list[IbPort] = []
    for port_dir in sorted((path / "ports").glob("*"), key=lambda p: _int(p.name) or 0):
        rate = _RATE.search(read_file(port_dir / "rate") or "")
        state = (read_file(port_dir / "state") or "").partition(":")[2].strip().lower() or "unknown"
        ports.append(
            IbPort(
                device=path.name,
                port=_int(port_dir.name) or 1,
                rate_gbps=float(rate.group(1)) if rate else None,
                state=state,
                link_layer=(read_file(port_dir / "link_layer") or "InfiniBand").lower(),
                guid=guid,
                pci_bus_id=pci_bus_id,
                netdevs=netdevs,
                **read_port_counters(port_dir / "counters"),
            )
        )
    return ports


# sysfs counter file -> IbPort field (#17): the errors placement weighs against a rail.
PORT_COUNTERS = {"symbol_error": "symbol_errors", "link_downed": "link_downed", "port_rcv_errors": "port_rcv_errors"}


def read_port_counters(counters: Path) -> dict[str, int | None]:
    """The port's error counters; a missing or unreadable file is an unknown counter."""
    return {field: _int(read_file(counters / name)) for name, field in PORT_COUNTERS.items()}


def read_numa(node_root: Path) -> list[NumaNode]:
    nodes: list[NumaNode] = []
    for d in sorted(node_root.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        mem = None
        meminfo = read_file(d / "meminfo") or ""
        match = re.search(r"MemTotal:\s+(\d+)\s+kB", meminfo)
        if match:
            mem = int(match.group(1)) // 1024
        nodes.append(NumaNode(index=int(d.name[4:]), cpus=read_file(d / "cpulist") or "", memory_mib=mem))
    return nodes


def read_cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    for line in (read_file(cpuinfo) or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            return value.strip()
    return None
