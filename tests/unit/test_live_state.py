"""Live state in placement: busy GPUs for exclusive jobs, NIC ports down, idleness as the last tie-break."""

from __future__ import annotations

import pytest

from graphsvc.placement import score
from graphsvc.placement.model import Gpu
from graphsvc.placement.request import PlacementRequest, parse_request
from graphsvc.placement.select import eligible, rail_up


def gpu(
    util: float | None = 0.0, nic_state: str | None = "active", mig: bool = False, mem_used: int | None = None
) -> Gpu:
    return Gpu(
        uuid="g", index=0, host="h", model="NVIDIA H100 80GB HBM3", memory_mib=81559, state="free", health="ok",
        temperature_c=40.0, utilization_pct=util, nvlink_domain="d", domain_kind="nvswitch", nic="n", rail=0,
        nic_rate_gbps=400.0, via="pcie-switch", leaf="l", mig_mode=mig, nic_state=nic_state,
        memory_used_mib=mem_used,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("util", "exclusive", "ok"),
    [(0.0, True, True), (9.9, True, True), (10.0, True, False), (95.0, True, False), (95.0, False, True),
     (None, True, True)],
)  # fmt: skip
def test_exclusive_jobs_skip_gpus_busy_outside_reservations(util: float | None, exclusive: bool, ok: bool) -> None:
    assert eligible(gpu(util), PlacementRequest(gpus=1, exclusive=exclusive)) is ok


@pytest.mark.parametrize(
    ("mem_used", "exclusive", "ok"),
    [(None, True, True), (0, True, True), (600, True, True), (2047, True, True), (2048, True, False),
     (70_000, True, False), (70_000, False, True)],
)  # fmt: skip
def test_exclusive_jobs_skip_gpus_whose_memory_is_in_use(mem_used: int | None, exclusive: bool, ok: bool) -> None:
    assert eligible(gpu(mem_used=mem_used), PlacementRequest(gpus=1, exclusive=exclusive)) is ok


@pytest.mark.parametrize(("state", "up"), [("active", True), (None, True), ("unknown", True), ("down", False),
                                            ("init", False), ("DOWN", False)])  # fmt: skip
def test_rail_up(state: str | None, up: bool) -> None:
    assert rail_up(gpu(nic_state=state)) is up


def test_mig_gpu_is_never_eligible() -> None:
    assert not eligible(gpu(mig=True), PlacementRequest(gpus=1))


def test_exclusive_in_the_text_form() -> None:
    assert parse_request("8 exclusive").exclusive and not parse_request("8").exclusive


@pytest.mark.parametrize(("utils", "idle"), [([], 1.0), ([0.0, 0.0], 1.0), ([50.0, 100.0], 0.25), ([250.0], 0.0)])
def test_idleness(utils: list[float], idle: float) -> None:
    assert score.idleness(utils) == idle


@pytest.mark.parametrize("names_model", [True, False])
def test_idleness_breaks_the_last_tie_only(names_model: bool) -> None:
    base = score.Facts(fit=1.0, bottleneck_gbps=900.0, healthy=1.0, cool=0.6, preferred=0.0, largest_before=8,
                       largest_after=8)  # fmt: skip
    idle = score.Facts(**{**base.__dict__, "idle": 0.9})
    busy = score.Facts(**{**base.__dict__, "idle": 0.1})
    cooler_busy = score.Facts(**{**base.__dict__, "idle": 0.1, "cool": 0.7})

    def key(f: score.Facts) -> tuple[float, ...]:
        return score.sort_key(f, names_model=names_model, cooler_gpus=True)

    assert key(idle) > key(busy)
    assert key(cooler_busy) > key(idle)  # temperature ranks before idleness
