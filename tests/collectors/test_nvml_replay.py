"""The NVML path, tested by replaying recorded NVML answers through the real parsing code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from topo_collector.collect import build_host_facts
from topo_collector.nvml import RACK_SWITCH_ID, XID_HEALTH, read_metrics, read_nvml
from topo_collector.nvml_api import RecordingNvml, ReplayNvml
from topo_collector.sysfs import SysfsInventory
from topo_facts import Health, PeerType
from topo_facts.models import MAX_XIDS

from graphsvc.ingest.host_plan import host_params

RECORDINGS = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


def replay(name: str) -> ReplayNvml:
    return ReplayNvml.load(RECORDINGS / f"{name}.json")


def test_hgx_h100_board() -> None:
    inv = read_nvml(replay("hgx-h100"))
    assert inv.driver_version == "550.90.07"
    assert len(inv.gpus) == 8
    g0 = inv.gpus[0]
    assert (g0.model, g0.memory_mib, g0.pci_bus_id, g0.compute_capability) == (
        "NVIDIA H100 80GB HBM3",
        81920,
        "0000:1b:00.0",
        "9.0",
    )
    assert (g0.temperature_c, g0.power_w, g0.utilization_pct, g0.mig_mode) == (40, 120.0, 0, False)
    assert [s.id for s in inv.nvswitches] == ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
    for g in inv.gpus:
        assert [(link.peer_id[5:7], link.links) for link in g.nvlinks] == [
            ("05", 5),
            ("06", 5),
            ("07", 4),
            ("08", 4),
        ]
        assert all(link.peer_type is PeerType.NVSWITCH and link.generation == 4 for link in g.nvlinks)
        assert sum(link.bandwidth_gbps for link in g.nvlinks) == 900.0
        assert g.nvlink_domain is None
    assert [g.numa_node for g in inv.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert inv.gpus[0].health is Health.OK
    assert inv.gpus[7].health is Health.DEGRADED
    assert inv.gpus[7].ecc_uncorrected == 2
    assert any("pending" in r for r in inv.gpus[7].health_reasons)


def test_nvl72_tray_reports_its_fabric_clique() -> None:
    inv = read_nvml(replay("gb200-tray"))
    assert len(inv.gpus) == 4
    assert {g.nvlink_domain for g in inv.gpus} == {"5e1c2b3a-9f8e-4d7c-8b6a-112233445566/32766"}
    assert [s.id for s in inv.nvswitches] == [RACK_SWITCH_ID]
    assert inv.nvswitches[0].location == "rack"
    for g in inv.gpus:
        (link,) = g.nvlinks
        assert (link.links, link.bandwidth_gbps, link.generation) == (18, 1800.0, 5)
    facts = build_host_facts("tray-1", inv, SysfsInventory(), cluster="c")
    params = host_params(facts, received_at=0)
    assert [d["props"]["kind"] for d in params["domains"]] == ["fabric-clique"]


def test_a100_bridged_pairs() -> None:
    inv = read_nvml(replay("a100-pcie"))
    assert inv.nvswitches == []
    uuids = [g.uuid for g in inv.gpus]
    peers = [[(link.peer_id, link.links) for link in g.nvlinks] for g in inv.gpus]
    assert peers == [[(uuids[1], 12)], [(uuids[0], 12)], [(uuids[3], 12)], [(uuids[2], 12)]]
    facts = build_host_facts("a100-1", inv, SysfsInventory())
    assert sorted(len(v) for v in _members(host_params(facts, received_at=0)).values()) == [2, 2]


def _members(params: dict[str, object]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for link in params["gpu_domains"]:  # type: ignore[attr-defined]
        out.setdefault(link["dst"], []).append(link["src"])
    return out


def test_metrics_come_from_the_same_answers() -> None:
    metrics = read_metrics(replay("hgx-h100"))
    assert [m.temperature_c for m in metrics] == [40, 41, 42, 43, 44, 45, 46, 47]
    assert metrics[7].health is Health.DEGRADED


def test_recording_round_trip(tmp_path: Path) -> None:
    recorder = RecordingNvml(replay("gb200-tray"))
    first = read_nvml(recorder)
    out = tmp_path / "rec.json"
    recorder.save(out, {"host": "test"})
    assert json.loads(out.read_text())["meta"] == {"host": "test"}
    second = read_nvml(ReplayNvml.load(out))
    assert [g.model_dump() for g in second.gpus] == [g.model_dump() for g in first.gpus]


def test_missing_answers_degrade_to_missing_facts() -> None:
    calls = {"device_count()": 1, "uuid(0)": "GPU-x", "name(0)": "NVIDIA Old GPU"}
    (gpu,) = read_nvml(ReplayNvml(calls)).gpus
    assert (gpu.uuid, gpu.model, gpu.memory_mib, gpu.nvlinks, gpu.health) == (
        "GPU-x",
        "NVIDIA Old GPU",
        None,
        [],
        Health.UNKNOWN,
    )


def _profiles(inv: object) -> list[list[str]]:
    return [[s.profile for s in g.mig_slices] for g in inv.gpus]  # type: ignore[attr-defined]


def test_mig_a100_40gb_reports_every_gpu_instance_by_profile() -> None:
    inv = read_nvml(replay("a100-40gb-mig"))
    assert inv.problems == []
    assert all(g.mig_mode for g in inv.gpus)
    assert _profiles(inv) == [
        ["7g.40gb"],
        ["3g.20gb", "3g.20gb"],
        ["2g.10gb", "4g.20gb", "1g.5gb"],  # by GPU instance id: 3, 5, 13
        ["1g.5gb"] * 7,
    ]
    s = inv.gpus[1].mig_slices[0]
    assert (s.uuid, s.gpu_instance_id, s.memory_mib) == ("MIG-a100mig-1010-4000-8000-000000000101", 1, 20096)
    assert {s.profile for g in inv.gpus for s in g.mig_slices} == {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}


def test_mig_h100_80gb_names_its_profiles_and_leaves_a_plain_gpu_whole() -> None:
    inv = read_nvml(replay("h100-80gb-mig"))
    assert _profiles(inv) == [
        ["3g.40gb", "3g.40gb"],
        ["7g.80gb"],
        ["1g.20gb", "2g.20gb", "4g.40gb"],
        ["1g.10gb"] * 7,
        [],
    ]
    assert [g.mig_mode for g in inv.gpus] == [True, True, True, True, False]
    facts = build_host_facts("h100-mig-1", inv, SysfsInventory())
    params = host_params(facts, received_at=0)
    assert len(params["mig_slices"]) == 2 + 1 + 3 + 7
    first = params["mig_slices"][0]
    assert (first["gpu"], first["props"]["profile"], first["props"]["host"]) == (
        inv.gpus[0].uuid,
        "3g.40gb",
        "h100-mig-1",
    )


def test_mig_slices_survive_a_recording_round_trip(tmp_path: Path) -> None:
    recorder = RecordingNvml(replay("h100-80gb-mig"))
    first = read_nvml(recorder)
    out = tmp_path / "rec.json"
    recorder.save(out, {})
    assert _profiles(read_nvml(ReplayNvml.load(out))) == _profiles(first)


def test_a_mig_device_that_fails_is_skipped_and_reported() -> None:
    calls = json.loads((RECORDINGS / "h100-80gb-mig.json").read_text())["calls"]
    calls["mig_device(0,1)"] = {"uuid": "MIG-x"}  # no instance id, no slices: a broken answer
    inv = read_nvml(ReplayNvml(calls))
    assert _profiles(inv)[0] == ["3g.40gb"]
    assert inv.problems and "MIG device 1" in inv.problems[0]


def with_errors(name: str, extra: dict[str, object]) -> ReplayNvml:
    """A recording plus answers for the error counters and XIDs (#17), as a real driver gives them."""
    calls = json.loads((RECORDINGS / f"{name}.json").read_text())["calls"]
    return ReplayNvml({**calls, **extra})


def test_nvlink_error_counters_are_summed_over_active_links() -> None:
    calls = json.loads((RECORDINGS / "hgx-h100.json").read_text())["calls"]
    active = [link for link in range(36) if calls.get(f"nvlink_state(0,{link})") == 1]
    assert active
    extra: dict[str, object] = {}
    for link in active:
        extra.update({f"nvlink_error_counter(0,{link},{c})": v for c, v in ((0, 2), (1, 1), (2, 3), (3, 4))})
    extra["nvlink_error_counter(1,0,0)"] = {"nvml_error": 3}  # not supported: stays unknown
    inv = read_nvml(with_errors("hgx-h100", extra))
    g0, g1 = inv.gpus[0], inv.gpus[1]
    n = len(active)
    assert (g0.nvlink_replay_errors, g0.nvlink_recovery_errors, g0.nvlink_crc_errors) == (2 * n, n, 7 * n)
    assert (g1.nvlink_replay_errors, g1.nvlink_recovery_errors, g1.nvlink_crc_errors) == (None, None, None)
    (m0, *_) = read_metrics(with_errors("hgx-h100", extra))
    assert m0.nvlink_replay_errors == 2 * n  # the metrics push carries them too


@pytest.mark.parametrize(
    ("xids", "health"),
    [
        # One row per line of XID_HEALTH, and codes outside it.
        ([48], Health.FAILED),
        ([63], Health.DEGRADED),
        ([64], Health.FAILED),
        ([74], Health.DEGRADED),
        ([79], Health.FAILED),
        ([94], Health.DEGRADED),
        ([95], Health.FAILED),
        ([13], Health.OK),  # a graphics engine exception: the application's fault, not the GPU's
        ([94, 79], Health.FAILED),  # the worst wins
        ([], Health.OK),
    ],
)
def test_critical_xids_mark_the_gpu(xids: list[int], health: Health) -> None:
    inv = read_nvml(with_errors("hgx-h100", {"xid_errors(2)": xids}))
    gpu = inv.gpus[2]
    assert gpu.xid_errors == xids and gpu.health is health
    assert sum(r.startswith("XID") for r in gpu.health_reasons) == sum(x in XID_HEALTH for x in xids)


def test_xids_are_bounded() -> None:
    inv = read_nvml(with_errors("hgx-h100", {"xid_errors(0)": list(range(40))}))
    assert inv.gpus[0].xid_errors == list(range(40 - MAX_XIDS, 40))


def test_error_counters_and_xids_reach_the_graph_params() -> None:
    inv = read_nvml(with_errors("hgx-h100", {"xid_errors(5)": [79], "nvlink_error_counter(5,0,1)": 9}))
    facts = build_host_facts("node-1", inv, SysfsInventory())
    params = host_params(facts, received_at=0.0)
    gpu = next(g for g in params["gpus"] if g["props"]["index"] == 5)["state"]  # health and load, written apart
    assert gpu["xid_errors"] == [79] and gpu["health"] == "failed"
