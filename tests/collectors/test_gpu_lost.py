"""One GPU that falls off the bus (XID 79, NVML_ERROR_GPU_IS_LOST) must not hide the other GPUs.

Before, the first NVML error of a lost GPU failed the whole read, the collector reported the host
with no GPUs at all and the service deleted every GPU of the host.
"""

from __future__ import annotations

import json
from pathlib import Path

from topo_collector.collect import build_host_facts, nvml_inventory
from topo_collector.nvml import GpuIdentities, read_metrics, read_nvml
from topo_collector.nvml_api import NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_GPU_IS_LOST, ReplayNvml
from topo_collector.sysfs import SysfsInventory
from topo_facts import Health

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "hgx-h100.json"
LOST = 3


def _calls() -> dict[str, object]:
    calls: dict[str, object] = json.loads(RECORDING.read_text())["calls"]
    return calls


def _lost(calls: dict[str, object], *, uuid_readable: bool = False) -> ReplayNvml:
    """GPU 3 answers GPU_IS_LOST to every call about it, as after XID 79."""
    out = dict(calls)
    for key in list(out):
        if key.endswith(f"({LOST})") or key.startswith(f"nvlink_state({LOST},"):
            if uuid_readable and key == f"uuid({LOST})":
                continue
            out[key] = {"nvml_error": NVML_ERROR_GPU_IS_LOST}
    out[f"xid_errors({LOST})"] = [79]
    return ReplayNvml(out)


def test_a_lost_gpu_is_reported_failed_and_the_others_as_usual() -> None:
    healthy = read_nvml(ReplayNvml(_calls()))
    inv = read_nvml(_lost(_calls()), host="h100-a")
    assert len(inv.gpus) == 8
    for before, after in zip(healthy.gpus, inv.gpus, strict=True):
        if before.index != LOST:
            assert after == before
    gpu = inv.gpus[LOST]
    assert gpu.index == LOST and gpu.health is Health.FAILED
    # No earlier collection knows its uuid: a placeholder unique to the host and slot.
    assert gpu.uuid == f"GPU-lost-h100-a-{LOST}"
    assert gpu.nvlinks == [] and gpu.xid_errors == [79]
    assert any("NVML error 15" in r for r in gpu.health_reasons)
    assert any(r.startswith("XID 79") for r in gpu.health_reasons)
    assert inv.problems and f"GPU {LOST}" in inv.problems[0]
    # The host document is valid (unique uuids and indexes) and carries all 8 GPUs.
    facts = build_host_facts("h100-a", inv, SysfsInventory())
    assert [g.health for g in facts.gpus].count(Health.FAILED) == 1 and len(facts.gpus) == 8


def test_an_earlier_collection_keeps_the_lost_gpus_uuid_and_model() -> None:
    known = GpuIdentities()
    first = read_nvml(ReplayNvml(_calls()), known=known, host="h100-a")
    inv = read_nvml(_lost(_calls()), known=known, host="h100-a")
    gpu = inv.gpus[LOST]
    was = first.gpus[LOST]
    assert (gpu.uuid, gpu.model, gpu.pci_bus_id, gpu.health) == (was.uuid, was.model, was.pci_bus_id, Health.FAILED)


def test_a_uuid_that_still_answers_is_kept() -> None:
    inv = read_nvml(_lost(_calls(), uuid_readable=True), host="h100-a")
    assert inv.gpus[LOST].uuid == _calls()[f"uuid({LOST})"]
    assert inv.gpus[LOST].health is Health.FAILED


def test_metrics_survive_a_lost_gpu() -> None:
    assert len(read_metrics(_lost(_calls()))) == 7  # its uuid unknown: nothing to attach metrics to
    known = GpuIdentities()
    read_nvml(ReplayNvml(_calls()), known=known)
    metrics = read_metrics(_lost(_calls()), known=known)
    assert len(metrics) == 8
    assert metrics[LOST].uuid == _calls()[f"uuid({LOST})"] and metrics[LOST].health is Health.FAILED
    assert [m.health for m in metrics].count(Health.FAILED) == 1


def test_a_missing_driver_still_reports_the_host_only() -> None:
    calls = {**_calls(), "init()": {"nvml_error": NVML_ERROR_DRIVER_NOT_LOADED}}
    assert nvml_inventory(ReplayNvml(calls)) is None
    calls = {**_calls(), "device_count()": {"nvml_error": NVML_ERROR_DRIVER_NOT_LOADED}}
    assert nvml_inventory(ReplayNvml(calls)) is None
