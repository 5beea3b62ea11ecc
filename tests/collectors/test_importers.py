"""Importers on every real file in tests/fixtures/topology, with exact expected facts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from topo_collector.importers import ImportOptions, detect_format, import_file
from topo_facts import HostFacts, PeerType

from graphsvc.ingest.host_plan import host_params

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


def load(name: str, gpu_model: str | None = None) -> HostFacts:
    return import_file(FIXTURES / name, ImportOptions(host="h1", gpu_model=gpu_model))


def nearest(facts: HostFacts) -> dict[str, tuple[str, str]]:
    bus = {g.uuid: g.pci_bus_id or g.uuid for g in facts.gpus}
    return {bus[a.gpu_uuid]: (a.nic, a.via) for a in facts.gpu_nic_affinity}


def domains(facts: HostFacts) -> list[int]:
    params = host_params(facts, received_at=0)
    return sorted(Counter(link["dst"] for link in params["gpu_domains"]).values())


def test_formats_are_detected() -> None:
    kinds = {f.name: detect_format(f.read_text()) for f in FIXTURES.iterdir() if f.suffix in (".xml", ".txt")}
    assert kinds == {
        "oci-bm-gpu-h100-8.nccl.xml": "nccl",
        "azure-nd-h100-v5.nccl.xml": "nccl",
        "azure-nd-a100-v4.nccl.xml": "nccl",
        "aws-p5-48xlarge.nccl.xml": "nccl",
        "dgx2.hwloc.xml": "hwloc",
        "h100-8gpu.nvidia-smi-topo-m.txt": "nvidia-smi-topo",
        "h200-vm.nvidia-smi-topo-m.txt": "nvidia-smi-topo",
        "mi300x-like.rccl.xml": "nccl",
        "mi300x-like.rocm-smi-showtopo.txt": "amd-topo",
        "mi300x-like.amd-smi-topology.txt": "amd-topo",
        "nvl72-two-trays.nccl.xml": "nccl",
    }


def test_oci_h100_dump() -> None:
    f = load("oci-bm-gpu-h100-8.nccl.xml")
    assert len(f.gpus) == 8
    # 10de:2330 subsystem 10de:16c1 in the file: the PCI ID database's "H100 SXM5 80GB".
    assert {(g.model, g.memory_mib) for g in f.gpus} == {("NVIDIA H100 80GB HBM3", 80 * 1024)}
    assert {g.compute_capability for g in f.gpus} == {"9.0"}
    assert [s.id for s in f.nvswitches] == ["0000:1a:00.0", "0000:1b:00.0", "0000:1c:00.0", "0000:1d:00.0"]
    for g in f.gpus:
        assert sum(link.links for link in g.nvlinks) == 18
        assert sorted(link.links for link in g.nvlinks) == [4, 4, 5, 5]
        assert all(link.peer_type is PeerType.NVSWITCH and link.generation == 4 for link in g.nvlinks)
        assert sum(link.bandwidth_gbps for link in g.nvlinks) == 900.0  # NVLink 4: 18 x 50 GB/s
    assert domains(f) == [8]  # all 8 GPUs in one full-mesh NVLink group (through the NVSwitches)
    assert nearest(f) == {
        "0000:0f:00.0": ("mlx5_0", "pcie-switch"),
        "0000:2d:00.0": ("mlx5_3", "pcie-switch"),
        "0000:44:00.0": ("mlx5_5", "pcie-switch"),
        "0000:5b:00.0": ("mlx5_7", "pcie-switch"),
        "0000:89:00.0": ("mlx5_9", "pcie-switch"),
        "0000:a8:00.0": ("mlx5_12", "pcie-switch"),
        "0000:c0:00.0": ("mlx5_14", "pcie-switch"),
        "0000:d8:00.0": ("mlx5_16", "pcie-switch"),
    }
    assert len(f.nics) == 16 and {n.rate_gbps for n in f.nics} == {180.0}
    # Eight dual-port NICs: each port its own rail; the port serving GPU i is rail i.
    assert len({n.pci_bus_id for n in f.nics}) == 8
    rails = {n.name: n.rail for n in f.nics}
    assert sorted(r for r in rails.values() if r is not None) == list(range(16))
    assert [rails[nic] for nic, _ in nearest(f).values()] == list(range(8))
    # Broadcom PEX switches: an upstream port with downstream-port bridges is one switch, not three.
    assert len(f.pcie_switches) == 8
    assert f.gpus[0].pcie_path == ["0000:08:00.0"]
    assert [n.index for n in f.numa_nodes] == [0, 1]
    assert f.numa_nodes[0].cpus == "0-55,112-167"


def test_azure_nd_h100_v5_skeleton() -> None:
    f = load("azure-nd-h100-v5.nccl.xml")
    assert (len(f.gpus), len(f.nics), len(f.pcie_switches)) == (8, 8, 8)
    assert all(not g.nvlinks for g in f.gpus)
    pairs = nearest(f)
    assert pairs["0001:00:00.0"] == ("nic@0101:00:00.0", "pcie-switch")
    assert pairs["000c:00:00.0"] == ("nic@0108:00:00.0", "pcie-switch")
    # one GPU and one HCA per PCIe switch, and the pairing follows the switch
    by_switch = {g.pcie_path[0]: g.pci_bus_id for g in f.gpus}
    nic_switch = {n.name: n.pcie_path[0] for n in f.nics}
    for gpu_bus, (nic, _) in pairs.items():
        assert by_switch[nic_switch[nic]] == gpu_bus
    assert {g.numa_node for g in f.gpus} == {0, 1}
    assert [n.rail for n in sorted(f.nics, key=lambda n: n.name)] == list(range(8))


def test_azure_nd_a100_v4_two_per_switch() -> None:
    f = load("azure-nd-a100-v4.nccl.xml", gpu_model="NVIDIA A100-SXM4-40GB")
    assert (len(f.gpus), len(f.nics), len(f.pcie_switches), len(f.numa_nodes)) == (8, 8, 4, 4)
    assert {(g.model, g.memory_mib) for g in f.gpus} == {("NVIDIA A100-SXM4-40GB", 40 * 1024)}
    per_switch = Counter(n for n, _ in nearest(f).values())
    assert set(per_switch.values()) == {1}  # two GPUs and two HCAs a switch: paired one to one


def test_aws_p5_efa() -> None:
    f = load("aws-p5-48xlarge.nccl.xml")
    assert len(f.gpus) == 8 and {g.compute_capability for g in f.gpus} == {"9.0"}
    assert len(f.nics) == 32 and {n.rate_gbps for n in f.nics} == {100.0}
    assert all(not g.nvlinks for g in f.gpus)  # this dump has no <nvlink> elements
    assert Counter(n.pcie_path[0] for n in f.nics).most_common(1)[0][1] == 4  # 4 EFA per GPU switch
    assert {via for _, via in nearest(f).values()} == {"pcie-switch"}


def test_dgx2_hwloc() -> None:
    f = load("dgx2.hwloc.xml")
    assert len(f.gpus) == 16
    assert {g.model for g in f.gpus} == {"Tesla V100-SXM3-32GB-H"}
    assert f.gpus[0].uuid == "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"
    assert len(f.nvswitches) == 12
    assert all(sum(link.links for link in g.nvlinks) == 6 for g in f.gpus)
    assert all(link.peer_type is PeerType.NVSWITCH for g in f.gpus for link in g.nvlinks)
    # hwloc's matrix has GPU-NVSwitch links only, no NVSwitch trunks between the two
    # baseboards, so the import sees two NVLink groups of 8 (a limit of the file, documented).
    assert domains(f) == [8, 8]
    assert f.cpu_model == "Intel(R) Xeon(R) Platinum 8174 CPU @ 3.10GHz"
    # Cascaded PLX PEX9781 chips: each chip's upstream port is a switch, its downstream ports are not.
    assert f.gpus[0].pcie_path == ["0000:32:00.0", "0000:2c:00.0", "0000:2b:00.0"]
    assert len(f.pcie_switches) == 18
    assert {g.memory_mib for g in f.gpus} == {32 * 1024}  # 10de:1db8, V100 SXM3 32GB


def test_nvidia_smi_topo_m() -> None:
    f = load("h100-8gpu.nvidia-smi-topo-m.txt", gpu_model="NVIDIA H100 80GB HBM3")
    assert len(f.gpus) == 8
    for g in f.gpus:
        assert len(g.nvlinks) == 7 and {link.links for link in g.nvlinks} == {18}
    assert [g.numa_node for g in f.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [(n.index, n.cpus) for n in f.numa_nodes] == [(0, "0-51"), (1, "52-103")]
    assert domains(f) == [8]


def test_smi_topo_with_nics() -> None:
    text = (
        "        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV12    PIX     SYS     0-31            0\n"
        "GPU1    NV12     X      SYS     NODE    0-31            0\n"
        "NIC0    PIX     SYS      X      SYS\n"
        "NIC1    SYS     NODE    SYS      X\n"
        "\nLegend:\n\n  X = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
    )
    from topo_collector.importers import parse_smi_topo

    f = parse_smi_topo(text, ImportOptions(host="h2"))
    assert [n.name for n in f.nics] == ["mlx5_0", "mlx5_1"]
    assert [(a.nic, a.via) for a in f.gpu_nic_affinity] == [("mlx5_0", "pcie-switch"), ("mlx5_1", "numa")]


def test_garbage_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.txt"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="unrecognised format"):
        import_file(bad, ImportOptions(host="h"))
    xml = tmp_path / "y.xml"
    xml.write_text("<notsystem/>")
    with pytest.raises(ValueError, match="not an NCCL topology file"):
        import_file(xml, ImportOptions(host="h"))
