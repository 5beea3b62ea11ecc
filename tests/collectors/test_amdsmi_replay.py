"""The AMD SMI path, tested by replaying a recording through the real parsing code (as for NVML)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from topo_collector.amd import read_amdsmi
from topo_collector.amdsmi_api import ReplayAmdSmi
from topo_collector.collect import amd_inventory, build_host_facts
from topo_collector.sysfs import SysfsInventory
from topo_facts import HostFacts, PeerType

from graphsvc.ingest.host_plan import host_params

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "amdsmi" / "mi300x-like.json"


def test_mi300x_board_from_a_replay() -> None:
    inv = read_amdsmi(ReplayAmdSmi.load(RECORDING))
    assert inv.problems == [] and len(inv.gpus) == 8
    g0 = inv.gpus[0]
    assert (g0.model, g0.memory_mib, g0.pci_bus_id, g0.numa_node) == ("AMD Instinct MI300X", 196592, "0000:05:00.0", 0)
    for g in inv.gpus:
        # Bandwidth is not in the recording (NOT_SUPPORTED): the PCI id's row gives 128 GB/s per xGMI link.
        assert sorted((x.peer_type, x.links, x.bandwidth_gbps) for x in g.nvlinks) == [(PeerType.GPU, 1, 128.0)] * 7
    facts = build_host_facts("mi-host", None, SysfsInventory(), amd=inv)
    params = host_params(facts, received_at=0)
    assert len({d["dst"] for d in params["gpu_domains"]}) == 1 and len(params["gpu_domains"]) == 8


def test_no_amdsmi_package_means_no_amd_gpus() -> None:
    assert amd_inventory() is None  # this machine has no amdsmi package: quietly nothing


def test_collect_cli_with_replayed_amdsmi() -> None:
    exe = shutil.which("topo-collector")
    assert exe
    proc = subprocess.run(
        [exe, "collect", "--once", "--dry-run", "--host", "mi", "--amdsmi-replay", str(RECORDING)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    facts = HostFacts.model_validate(json.loads(proc.stdout))
    assert [g.model for g in facts.gpus] == ["AMD Instinct MI300X"] * 8
