"""What a real GPU showed: a one-GPU H200 VM (driver 580.159.04) lent to this project on 2026-12-04.

`tests/device/run.sh` ran the collector there against real NVML. Three things broke that no
recording written by hand had shown; each has a test here, on the answers captured there
(`fixtures/nvml/h200-vm.json`, `fixtures/topology/h200-vm.nvidia-smi-topo-m.txt`):
  * the fabric-info call passed its struct by value and the process died (SIGSEGV);
  * `nvidia-smi topo -m` underlines its header with terminal escapes, even into a file;
  * the VM's sysfs says numa_node -1 for every device on its one NUMA node.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pynvml
import pytest
from topo_collector.collect import build_host_facts
from topo_collector.importers import ImportOptions, detect_format, parse_smi_topo
from topo_collector.nvml import read_nvml
from topo_collector.nvml_api import RealNvml, ReplayNvml
from topo_collector.sysfs import IbPort, NetDevice, NumaNode, PciDevice, SysfsInventory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GPU_BUS = "0000:00:06.0"
NIC_BUS = "0000:00:03.0"


def vm_sysfs(numa_nodes: int) -> SysfsInventory:
    """The VM's devices as its sysfs shows them: no NUMA node on any PCI device."""
    return SysfsInventory(
        pci={
            GPU_BUS: PciDevice(GPU_BUS, 0x030200, 0x10DE, 0x2335, None, None, "nvidia"),
            NIC_BUS: PciDevice(NIC_BUS, 0x020000, 0x1AF4, 0x1000, None, None, "virtio-pci"),
        },
        net=[NetDevice("eth0", NIC_BUS, "up", None, "02:00:00:00:00:01")],
        numa=[NumaNode(i, f"{16 * i}-{16 * i + 15}", 128869) for i in range(numa_nodes)],
    )


def test_the_real_recording_replays_to_what_nvidia_smi_showed() -> None:
    inv = read_nvml(ReplayNvml.load(FIXTURES / "nvml" / "h200-vm.json"))
    assert inv.driver_version == "580.159.04"
    [gpu] = inv.gpus
    # nvidia-smi -q -x on that machine: uuid, product name, bus id, 143771 MiB.
    assert (gpu.uuid, gpu.model, gpu.pci_bus_id, gpu.memory_mib) == (
        "GPU-4c39815b-4f05-5f36-dc17-871cf534ce20",
        "NVIDIA H200",
        GPU_BUS,
        143771,
    )
    assert gpu.compute_capability == "9.0"
    assert gpu.nvlinks == [] and gpu.nvlink_domain is None  # NVLink not supported there; fabric state 0


def test_the_real_topo_m_header_parses_through_its_terminal_escapes() -> None:
    text = (FIXTURES / "topology" / "h200-vm.nvidia-smi-topo-m.txt").read_text()
    assert "\x1b[4mGPU0" in text  # as captured: the header is underlined
    assert detect_format(text) == "nvidia-smi-topo"
    facts = parse_smi_topo(text, ImportOptions(host="vm", gpu_model="NVIDIA H200"))
    assert [(g.index, g.numa_node) for g in facts.gpus] == [(0, 0)]
    assert [(n.index, n.cpus) for n in facts.numa_nodes] == [(0, "0-15")]


@pytest.mark.parametrize(("numa_nodes", "expected"), [(1, 0), (2, None)])
def test_one_numa_node_holds_every_device(numa_nodes: int, expected: int | None) -> None:
    """One node: every device is local to it. Two: sysfs's -1 stays unknown, not guessed."""
    nvml = read_nvml(ReplayNvml.load(FIXTURES / "nvml" / "h200-vm.json"))
    facts = build_host_facts("vm", nvml, vm_sysfs(numa_nodes))
    assert [g.numa_node for g in facts.gpus] == [expected]
    assert [n.numa_node for n in facts.nics] == [expected]
    assert [a.via for a in facts.gpu_nic_affinity] == (["numa"] if expected == 0 else ["host"])


def test_a_nic_without_a_pci_function_stays_off_the_one_node() -> None:
    """A soft-RoCE device (rxe0) has no PCI function: it is on no node, so GPUs prefer the real NIC."""
    sysfs = vm_sysfs(1)
    sysfs.ib.append(IbPort("rxe0", 1, 100.0, "active", "ethernet", None, None, ()))
    facts = build_host_facts("vm", read_nvml(ReplayNvml.load(FIXTURES / "nvml" / "h200-vm.json")), sysfs)
    assert {n.name: n.numa_node for n in facts.nics} == {"eth0": 0, "rxe0": None}


def test_fabric_info_passes_its_struct_by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C function takes a pointer; a struct given by value is what killed the process there.

    The stand-in takes an address, as the C function does, so ctypes refuses a struct by value
    ("wrong type") instead of crashing. (A POINTER(struct) argtype would not show it: ctypes then
    takes the struct's address by itself.)
    """
    cluster = bytes(range(16))

    def fill(_device: object, address: int) -> int:
        info = ctypes.cast(address, ctypes.POINTER(pynvml.c_nvmlGpuFabricInfo_t)).contents
        ctypes.memmove(info.clusterUuid, cluster, len(cluster))
        info.cliqueId = 7
        info.state = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED
        info.status = 0
        return 0

    c_function = ctypes.CFUNCTYPE(ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p)(fill)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer", lambda _name: c_function)
    nvml = RealNvml()
    nvml._handles[0] = ctypes.c_void_p(1)
    info = nvml.fabric_info(0)
    assert info["clique_id"] == 7
    assert info["state"] == pynvml.NVML_GPU_FABRIC_STATE_COMPLETED
    assert info["cluster_uuid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_without_a_node_list_devices_keep_the_node_their_function_reports() -> None:
    """No /sys/devices/system/node (some containers): the GPU keeps NVML's or sysfs's node, and
    so do the NIC and the bridge above it; before, only the GPU did and the NIC lost its node."""
    bridge = "0000:00:02.0"
    sysfs = SysfsInventory(
        pci={
            GPU_BUS: PciDevice(GPU_BUS, 0x030200, 0x10DE, 0x2335, 1, None, "nvidia"),
            NIC_BUS: PciDevice(NIC_BUS, 0x020000, 0x15B3, 0x1021, 1, bridge, "mlx5_core"),
            bridge: PciDevice(bridge, 0x060400, 0x8086, 0x0001, 1, None, "pcieport"),
        },
        net=[NetDevice("eth0", NIC_BUS, "up", None, "02:00:00:00:00:01")],
        numa=[],
    )
    facts = build_host_facts("vm", read_nvml(ReplayNvml.load(FIXTURES / "nvml" / "h200-vm.json")), sysfs)
    assert [g.numa_node for g in facts.gpus] == [1]
    assert [n.numa_node for n in facts.nics] == [1]
    assert [(s.bus_id, s.numa_node) for s in facts.pcie_switches] == [(bridge, 1)]
    assert [a.via for a in facts.gpu_nic_affinity] == ["numa"]
    # The reported node is a node of the host too, so the graph links the devices to it.
    assert [(n.index, n.cpus) for n in facts.numa_nodes] == [(1, None)]
