"""The collector against this machine's real sysfs, and IB port parsing on an HCA-shaped tree."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from topo_collector.collect import collect
from topo_collector.nvml_api import NVML_ERROR_LIBRARY_NOT_FOUND, NvmlError
from topo_collector.sysfs import read_ib_device, read_sysfs


def test_pci_numa_and_net_match_sys() -> None:
    inv = read_sysfs()
    assert set(inv.pci) == set(os.listdir("/sys/bus/pci/devices"))
    assert {n.index for n in inv.numa} == {
        int(d[4:]) for d in os.listdir("/sys/devices/system/node") if d.startswith("node") and d[4:].isdigit()
    }
    assert {n.name for n in inv.net} == set(os.listdir("/sys/class/net"))
    for bus, dev in inv.pci.items():
        numa = Path(f"/sys/bus/pci/devices/{bus}/numa_node").read_text().strip()
        assert dev.numa_node == (int(numa) if int(numa) >= 0 else None)
        assert dev.class_code == int(Path(f"/sys/bus/pci/devices/{bus}/class").read_text(), 16)
    for node in inv.numa:
        assert node.cpus == Path(f"/sys/devices/system/node/node{node.index}/cpulist").read_text().strip()
    ib = Path("/sys/class/infiniband")
    assert {p.device for p in inv.ib} == (set(os.listdir(ib)) if ib.exists() else set())


def test_collect_without_driver_reports_host_and_logs_one_line(caplog: pytest.LogCaptureFixture) -> None:
    class NoDriver:
        def init(self) -> None:
            raise NvmlError(NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found")

    with caplog.at_level(logging.WARNING):
        facts = collect("test-host", nv=NoDriver())  # type: ignore[arg-type]
    assert facts.gpus == []
    assert [n.index for n in facts.numa_nodes] == [n.index for n in read_sysfs().numa]
    physical = {n.name for n in read_sysfs().net if n.pci_bus_id}
    assert {n.name for n in facts.nics} == physical
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "NVIDIA driver not available" in warnings[0].getMessage()


def test_ib_ports_parse(tmp_path: Path) -> None:
    pci = tmp_path / "devices" / "0000:1a:00.0"
    (pci / "net" / "ibp26s0").mkdir(parents=True)
    hca = tmp_path / "mlx5_0"
    (hca / "ports" / "1").mkdir(parents=True)
    (hca / "device").symlink_to(pci)
    (hca / "node_guid").write_text("b83f:d203:00a1:b2c4\n")
    (hca / "ports" / "1" / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (hca / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    (hca / "ports" / "1" / "link_layer").write_text("InfiniBand\n")
    (port,) = read_ib_device(hca)
    assert (port.device, port.port, port.rate_gbps, port.state, port.link_layer) == (
        "mlx5_0",
        1,
        400.0,
        "active",
        "infiniband",
    )
    assert (port.guid, port.pci_bus_id, port.netdevs) == ("0xb83fd20300a1b2c4", "0000:1a:00.0", ("ibp26s0",))
    assert (port.symbol_errors, port.link_downed, port.port_rcv_errors) == (None, None, None)  # no counters dir
    counters = hca / "ports" / "1" / "counters"
    counters.mkdir()
    (counters / "symbol_error").write_text("12\n")
    (counters / "link_downed").write_text("1\n")
    (counters / "port_rcv_errors").write_text("0\n")
    (port,) = read_ib_device(hca)
    assert (port.symbol_errors, port.link_downed, port.port_rcv_errors) == (12, 1, 0)


def test_one_switch_chip_is_one_switch() -> None:
    from topo_collector.sysfs import PciDevice, SysfsInventory

    def dev(bus: str, cls: int, vendor: int, device: int, parent: str | None) -> PciDevice:
        return PciDevice(bus, cls, vendor, device, 0, parent, None)

    inv = SysfsInventory(
        pci={
            "0000:00:01.0": dev("0000:00:01.0", 0x060400, 0x8086, 0x352A, None),  # root port
            "0000:01:00.0": dev("0000:01:00.0", 0x060400, 0x1000, 0xC030, "0000:00:01.0"),  # switch upstream port
            "0000:02:00.0": dev("0000:02:00.0", 0x060400, 0x1000, 0xC030, "0000:01:00.0"),  # its downstream port
            "0000:03:00.0": dev("0000:03:00.0", 0x030200, 0x10DE, 0x2330, "0000:02:00.0"),  # GPU
            # a second, identical chip cascaded below the first (as on a DGX-2)
            "0000:04:00.0": dev("0000:04:00.0", 0x060400, 0x1000, 0xC030, "0000:02:00.0"),
            "0000:05:00.0": dev("0000:05:00.0", 0x060400, 0x1000, 0xC030, "0000:04:00.0"),
            "0000:06:00.0": dev("0000:06:00.0", 0x030200, 0x10DE, 0x2330, "0000:05:00.0"),
        }
    )
    assert inv.bridges_above("0000:03:00.0") == ["0000:01:00.0", "0000:00:01.0"]
    assert inv.bridges_above("0000:06:00.0") == ["0000:04:00.0", "0000:01:00.0", "0000:00:01.0"]


def test_without_libudev_the_collector_refuses_instead_of_sending_no_nics(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slim container image has no libudev.so: pyudev's own loader finds no library. Facts
    without the PCI tree would delete the host's NICs and cables in the graph: a clear error."""
    import pyudev._ctypeslib.utils as ctypes_utils

    monkeypatch.setattr(ctypes_utils, "find_library", lambda _name: None)
    with pytest.raises(RuntimeError, match="libudev is missing or cannot load"):
        read_sysfs()
