"""The words of infeasible reasons that say more than "without it it does" (docs/placement.md,
"When nothing fits"); the searches behind them are in tests/integration/test_request_faults.py."""

from __future__ import annotations

import pytest

from graphsvc.placement.explain import memory_message, unknown_sites_message
from graphsvc.placement.request import PlacementRequest, RequestError
from graphsvc.reservations.service import PRIORITIES, check_priority

MANY = [f"s{i:02}" for i in range(11)]


@pytest.mark.parametrize(
    ("missing", "known", "message"),
    [
        (["nowhere"], ["cloud", "dc"], "no site named 'nowhere' is known; known sites: cloud, dc"),
        (["a", "b"], ["dc"], "no sites named 'a', 'b' are known; known sites: dc"),
        (["nowhere"], [], "no site named 'nowhere' is known: the graph has no sites (docs/sites.md)"),
        (["nowhere"], MANY[:10], f"no site named 'nowhere' is known; known sites: {', '.join(MANY[:10])}"),
        (["nowhere"], MANY, "no site named 'nowhere' is known; 11 sites are known (`graphsvc sites` lists them)"),
        (["a\x00"], ["dc"], "no site named 'a\\x00' is known; known sites: dc"),
    ],
)  # fmt: skip
def test_an_unknown_site_is_named(missing: list[str], known: list[str], message: str) -> None:
    assert unknown_sites_message(missing, known) == message


@pytest.mark.parametrize(
    ("asked", "model", "mib", "gpu", "words", "gib"),
    [
        (80.0, "H100", 81559, "NVIDIA H100 80GB HBM3",
         "the largest H100 that meets the other constraints has 79.6 GiB (NVIDIA H100 80GB HBM3, 81559 MiB)", 79.6),
        (200.0, None, 192 * 1024, "NVIDIA B200",
         "the largest GPU that meets the other constraints has 192 GiB (NVIDIA B200, 196608 MiB)", 192.0),
        (48.5, "L40S", 46068, "NVIDIA L40S",
         "the largest L40S that meets the other constraints has 44.9 GiB (NVIDIA L40S, 46068 MiB)", 44.9),
    ],
)  # fmt: skip
def test_the_memory_reason_names_the_most_there_is(
    asked: float, model: str | None, mib: int, gpu: str, words: str, gib: float
) -> None:
    """`mem>=80` ruled out the "80 GB" H100 (79.6 GiB), and the reason did not say what there was.
    The minimum offered instead is rounded down, so the GPUs named meet it."""
    said, offered = memory_message(PlacementRequest(gpus=8, model=model, min_memory_gib=asked), mib, gpu)
    assert said == f"nothing fits with the memory minimum ({asked:g} GiB): {words}"
    assert offered == gib and offered * 1024 <= mib


@pytest.mark.parametrize(("priority", "ok"), [(-1001, False), (-1000, True), (0, True), (1000, True), (1001, False),
                                              (99_999_999, False), (-(2**31), False)])  # fmt: skip
def test_a_plan_takes_the_priorities_reserve_takes(priority: int, ok: bool) -> None:
    """`preemptionPlan(priority: 99999999)` was planned while `reserve` refuses it."""
    if ok:
        check_priority(priority)
        return
    with pytest.raises(RequestError) as err:
        check_priority(priority)
    assert (err.value.field, err.value.message) == ("priority", "must be between -1000 and 1000")
    assert (PRIORITIES[0], PRIORITIES[-1]) == (-1000, 1000)
