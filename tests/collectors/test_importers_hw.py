"""Issue 14 importer behaviour: identity by PCI id, multi-host NVLink fabrics, AMD xGMI, NIC pairing, safety."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from topo_collector.importers import ImportOptions, import_file, import_hosts, parse_nccl_hosts
from topo_facts import HostFacts, PeerType

from graphsvc.ingest.host_plan import host_params

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


def domains(facts: HostFacts) -> dict[str, int]:
    return dict(Counter(link["dst"] for link in host_params(facts, received_at=0)["gpu_domains"]))


def pairing(facts: HostFacts) -> list[tuple[str, str, str]]:
    bus = {g.uuid: g.pci_bus_id or "" for g in facts.gpus}
    return [(bus[a.gpu_uuid], a.nic, a.via) for a in facts.gpu_nic_affinity]


def test_two_nvl72_trays_in_one_dump_share_one_nvlink_domain() -> None:
    opts = ImportOptions(host="x", rack="nvl72-r01", host_pattern="nvl72-r01-t{n:02d}")
    result = import_hosts(FIXTURES / "nvl72-two-trays.nccl.xml", opts)
    assert result.warnings == []
    assert [h.hostname for h in result.hosts] == ["nvl72-r01-t01", "nvl72-r01-t02"]
    doms = [domains(h) for h in result.hosts]
    assert len(doms[0]) == 1 and doms[0] == doms[1] and list(doms[0].values()) == [4]
    for h in result.hosts:
        assert {(g.model, g.memory_mib) for g in h.gpus} == {("NVIDIA GB200", 186 * 1024)}
        assert len({g.pci_bus_id for g in h.gpus}) == 4  # the same bus ids on both trays, kept per host
        for g in h.gpus:
            assert [(x.peer_type, x.links, x.bandwidth_gbps, x.generation) for x in g.nvlinks] == [
                (PeerType.NVSWITCH, 18, 1800.0, 5)
            ]
        assert [s.location for s in h.nvswitches] == ["rack"]
        # GPUs reach Grace over C2C; each NUMA node's two GPUs get its two NICs, one each.
        assert [(nic, via) for _, nic, via in pairing(h)] == [
            ("mlx5_0", "numa"), ("mlx5_1", "numa"), ("mlx5_2", "numa"), ("mlx5_3", "numa")
        ]  # fmt: skip
        assert [n.rail for n in h.nics] == [0, 1, 2, 3]
    uuids = [g.uuid for h in result.hosts for g in h.gpus]
    assert len(set(uuids)) == 8


def test_multi_host_dump_names_hosts_from_a_list_or_refuses_without_names() -> None:
    path = FIXTURES / "nvl72-two-trays.nccl.xml"
    named = import_hosts(path, ImportOptions(host="x", host_names=["tray-a", "tray-b"], nvlink_domain="rack-7"))
    assert [h.hostname for h in named.hosts] == ["tray-a", "tray-b"]
    assert {g.nvlink_domain for h in named.hosts for g in h.gpus} == {"rack-7"}
    with pytest.raises(ValueError, match="holds 2 hosts"):
        import_hosts(path, ImportOptions(host="x"))
    with pytest.raises(ValueError, match="2 hosts but 3 host names"):
        import_hosts(path, ImportOptions(host="x", host_names=["a", "b", "c"]))


GB = """<system version="1"><cpu numaid="0" affinity="ff">
<pci busid="0008:01:00.0" class="0x030200" vendor="0x10de" device="{device}">
<gpu dev="0" sm="103" rank="0" gdr="1"><nvlink target="ffffffff:ff:1f.0" count="18" tclass="0x068000"/></gpu>
</pci></cpu></system>"""


@pytest.mark.parametrize(("device", "model"), [("0x31c2", "NVIDIA GB300"), ("0x3182", "NVIDIA B300")])
def test_gb300_and_b300_are_told_apart_by_pci_id(device: str, model: str) -> None:
    facts = parse_nccl_hosts(GB.format(device=device), ImportOptions(host="h")).hosts[0]
    assert facts.gpus[0].model == model and facts.gpus[0].memory_mib == 288 * 1024
    assert facts.gpus[0].compute_capability == "10.3"


def test_sm_alone_names_the_architecture_not_a_model() -> None:
    result = import_hosts(FIXTURES / "aws-p5-48xlarge.nccl.xml", ImportOptions(host="p5"))
    assert {(g.model, g.memory_mib) for g in result.hosts[0].gpus} == {("NVIDIA Hopper GPU (sm_90)", None)}
    assert any("GPU model not identified" in w for w in result.warnings)
    assert any("no <nvlink> or <xgmi> entries" in w and "PCIe-only" in w for w in result.warnings)
    named = import_hosts(
        FIXTURES / "aws-p5-48xlarge.nccl.xml", ImportOptions(host="p5", gpu_model="NVIDIA H100 80GB HBM3")
    )
    assert {g.model for g in named.hosts[0].gpus} == {"NVIDIA H100 80GB HBM3"}


def test_mi300x_rccl_dump() -> None:
    result = import_hosts(FIXTURES / "mi300x-like.rccl.xml", ImportOptions(host="mi"))
    assert result.warnings == []
    f = result.hosts[0]
    assert len(f.gpus) == 8
    assert {(g.model, g.memory_mib, g.compute_capability) for g in f.gpus} == {
        ("AMD Instinct MI300X", 192 * 1024, None)
    }
    for g in f.gpus:
        # xGMI full mesh: one 128 GB/s link to each of the 7 others.
        assert (
            sorted((x.peer_type, x.links, x.bandwidth_gbps, x.generation) for x in g.nvlinks)
            == [(PeerType.GPU, 1, 128.0, 4)] * 7
        )
    assert list(domains(f).values()) == [8]
    assert [g.numa_node for g in f.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    # Four NICs per NUMA node on their own root ports: one NIC per GPU, never all on the first.
    assert [(nic, via) for _, nic, via in pairing(f)] == [(f"mlx5_{i}", "numa") for i in range(8)]
    # The frontend NIC directly under CPU 0 is kept, and (no RDMA) serves no GPU and has no rail.
    eno1 = next(n for n in f.nics if n.name == "eno1")
    assert eno1.pcie_path == [] and eno1.numa_node == 0 and eno1.rail is None


@pytest.mark.parametrize("name", ["mi300x-like.rocm-smi-showtopo.txt", "mi300x-like.amd-smi-topology.txt"])
def test_amd_smi_and_rocm_smi_text(name: str) -> None:
    result = import_hosts(FIXTURES / name, ImportOptions(host="mi", gpu_model="AMD Instinct MI300X"))
    assert result.warnings == []
    f = result.hosts[0]
    assert len(f.gpus) == 8 and {g.memory_mib for g in f.gpus} == {192 * 1024}
    assert all(len(g.nvlinks) == 7 and {x.bandwidth_gbps for x in g.nvlinks} == {128.0} for g in f.gpus)
    assert list(domains(f).values()) == [8]
    if "amd-smi" in name:
        assert f.gpus[1].pci_bus_id == "0000:26:00.0"
    else:
        assert [g.numa_node for g in f.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    bare = import_hosts(FIXTURES / name, ImportOptions(host="mi"))
    assert any("--gpu-model" in w for w in bare.warnings)


def test_dual_port_nics_are_used_per_device_before_per_port() -> None:
    # Two GPUs and two dual-port NICs under one switch: each GPU gets its own NIC device.
    xml = """<system version="1"><cpu numaid="0" affinity="ff">
<pci busid="0000:10:00.0" class="0x060400">
  <pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x2330"><gpu dev="0" sm="90"/></pci>
  <pci busid="0000:12:00.0" class="0x030200" vendor="0x10de" device="0x2330"><gpu dev="1" sm="90"/></pci>
  <pci busid="0000:13:00.0" class="0x020700"><nic>
    <net name="mlx5_0" port="1" guid="0x1" speed="200000"/><net name="mlx5_1" port="2" guid="0x1" speed="200000"/>
  </nic></pci>
  <pci busid="0000:14:00.0" class="0x020700"><nic>
    <net name="mlx5_2" port="1" guid="0x2" speed="200000"/><net name="mlx5_3" port="2" guid="0x2" speed="200000"/>
  </nic></pci>
</pci></cpu></system>"""
    f = parse_nccl_hosts(xml, ImportOptions(host="h")).hosts[0]
    assert [(nic, via) for _, nic, via in pairing(f)] == [("mlx5_0", "pcie-switch"), ("mlx5_2", "pcie-switch")]
    assert {n.name: n.rail for n in f.nics} == {"mlx5_0": 0, "mlx5_2": 1, "mlx5_1": 2, "mlx5_3": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"', "not well-formed XML"),
        (
            '<?xml version="1.0"?><!DOCTYPE system [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            "<system>&b;</system>",
            "refused: the XML declares entities",
        ),
        (
            '<?xml version="1.0"?><!DOCTYPE system [<!ENTITY x SYSTEM "file:///etc/passwd">]><system>&x;</system>',
            "refused",
        ),
    ],
)
def test_hostile_and_broken_xml_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.xml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message):
        import_file(f, ImportOptions(host="h"))


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    from topo_collector.importers.common import read_topology_file

    f = tmp_path / "big.xml"
    f.write_bytes(b"<system>" + b" " * 2048 + b"</system>")
    with pytest.raises(ValueError, match="larger than the 1024 byte limit"):
        read_topology_file(f, limit=1024)


def test_gpu_model_option_gives_memory_and_link_bandwidth() -> None:
    f = import_file(FIXTURES / "h100-8gpu.nvidia-smi-topo-m.txt", ImportOptions(host="h", gpu_model="H100-SXM"))
    assert {g.memory_mib for g in f.gpus} == {80 * 1024}
    assert {x.bandwidth_gbps for g in f.gpus for x in g.nvlinks} == {900.0}  # NV18 x 50 GB/s
    p5 = import_file(FIXTURES / "aws-p5-48xlarge.nccl.xml", ImportOptions(host="p5", gpu_model="NVIDIA H100 80GB HBM3"))
    assert {g.memory_mib for g in p5.gpus} == {80 * 1024}


def test_smi_topo_spreads_gpus_over_equally_near_nics() -> None:
    from topo_collector.importers import parse_smi_topo

    text = (
        "        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      SYS     NODE    NODE    0-31            0\n"
        "GPU1    SYS      X      NODE    NODE    0-31            0\n"
        "NIC0    NODE    NODE     X      PIX\n"
        "NIC1    NODE    NODE    PIX      X\n"
        "\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
    )
    f = parse_smi_topo(text, ImportOptions(host="h"))
    assert [(a.nic, a.via) for a in f.gpu_nic_affinity] == [("mlx5_0", "numa"), ("mlx5_1", "numa")]


def test_unknown_numa_node_stays_unknown() -> None:
    xml = """<system version="1"><cpu numaid="-1" affinity="ff">
<pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x2330"><gpu dev="0" sm="90"/></pci>
</cpu></system>"""
    f = parse_nccl_hosts(xml, ImportOptions(host="vm")).hosts[0]
    assert f.numa_nodes == [] and f.gpus[0].numa_node is None
