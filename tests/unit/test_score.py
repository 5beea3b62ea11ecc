"""The scoring weight set and every tie-break of the ranking, as tables (no store)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from graphsvc.placement.score import (
    WEIGHTS,
    Facts,
    bandwidth_share,
    choice_note,
    coolness,
    score,
    sort_key,
)

BASE = Facts(fit=1.0, bottleneck_gbps=900.0, healthy=1.0, cool=0.5, preferred=0.0, largest_before=8, largest_after=8)


def test_weights_sum_to_one_so_scores_are_0_to_100() -> None:
    assert WEIGHTS.fit + WEIGHTS.bandwidth + WEIGHTS.health_cool + WEIGHTS.preferred == pytest.approx(1.0)
    best = Facts(1.0, None, 1.0, 1.0, 1.0, 8, 8)
    worst = Facts(0.0, 0.0, 0.0, 0.0, 0.0, 8, 0)
    assert score(best) == 100.0 and score(worst) == 0.0


@pytest.mark.parametrize(
    ("change", "delta"),
    [
        # Each weight, alone: moving its fact by 1.0 (or its full range) moves the score by 100 x weight.
        ({"fit": 0.0}, -50.0),
        ({"bottleneck_gbps": 0.0}, -30.0 * 900 / 1800),  # 900 of the 1,800 GB/s ceiling
        ({"bottleneck_gbps": 1800.0}, +30.0 * 900 / 1800),
        ({"healthy": 0.0}, -10.0 * 0.5),  # health x coolness (0.5)
        ({"cool": 1.0}, +10.0 * 0.5),
        ({"preferred": 1.0}, +10.0),
        ({"largest_after": 0}, 0.0),  # fragmentation orders candidates, it does not score them
        # The error penalties (#17), one row per named weight: every GPU affected costs 100 x weight.
        ({"nvlink_errors": 1.0}, -100 * WEIGHTS.nvlink_errors),
        ({"xid_errors": 1.0}, -100 * WEIGHTS.xid_errors),
        ({"nic_errors": 1.0}, -100 * WEIGHTS.nic_errors),
        ({"nvlink_errors": 0.5}, -50 * WEIGHTS.nvlink_errors),
    ],
)
def test_each_weight_moves_the_score_by_its_share(change: dict[str, Any], delta: float) -> None:
    assert score(replace(BASE, **change)) - score(BASE) == pytest.approx(delta)


@pytest.mark.parametrize(
    ("gbps", "share"),
    [(None, 1.0), (0.0, 0.0), (32.0, 32 / 1800), (600.0, 1 / 3), (900.0, 0.5), (1800.0, 1.0), (3600.0, 1.0)],
)
def test_bandwidth_share(gbps: float | None, share: float) -> None:
    assert bandwidth_share(gbps) == pytest.approx(share)


@pytest.mark.parametrize(("temps", "cool"), [([], 0.5), ([50.0], 0.5), ([40.0, 60.0], 0.5), ([30.0], 0.7)])
def test_coolness(temps: list[float], cool: float) -> None:
    assert coolness(temps) == pytest.approx(cool)


# (name, better, worse, names_model, cooler_gpus): `better` must rank strictly above `worse`.
NAMED = True
ANY = False
TIE_BREAKS = [
    ("preferred hosts first, over fit", replace(BASE, preferred=1.0, fit=0.2), BASE, NAMED, False),
    ("preferred hosts first, over bandwidth", replace(BASE, preferred=1.0, bottleneck_gbps=32.0), BASE, ANY, False),
    ("named model: fit before bandwidth", BASE, replace(BASE, fit=0.5, bottleneck_gbps=1800.0), NAMED, False),
    ("named model: bandwidth breaks a fit tie", BASE, replace(BASE, bottleneck_gbps=32.0), NAMED, False),
    ("named model: health breaks a bandwidth tie", BASE, replace(BASE, healthy=0.5), NAMED, False),
    ("named model: cool breaks a health tie", replace(BASE, cool=0.7), BASE, NAMED, True),
    (
        "no model: best bandwidth before fit",
        replace(BASE, fit=0.25),
        replace(BASE, bottleneck_gbps=600.0),
        ANY,
        False,
    ),
    (
        "no model: keeping the largest block before bandwidth (a larger job keeps its place)",
        replace(BASE, bottleneck_gbps=900.0, largest_before=72, largest_after=72),
        replace(BASE, bottleneck_gbps=1800.0, largest_before=72, largest_after=70),
        ANY,
        False,
    ),
    ("no model: fit breaks a bandwidth tie", BASE, replace(BASE, fit=0.5), ANY, False),
    ("no model: health breaks a fit tie", BASE, replace(BASE, healthy=0.5), ANY, False),
    ("no model: cool breaks a health tie", replace(BASE, cool=0.7), BASE, ANY, True),
    # Error-freeness (#17): after health, before temperature; one row per named weight.
    ("named model: NVLink errors break a health tie", BASE, replace(BASE, nvlink_errors=0.25), NAMED, False),
    ("named model: XIDs break a health tie", BASE, replace(BASE, xid_errors=0.25), NAMED, False),
    ("named model: NIC errors break a health tie", BASE, replace(BASE, nic_errors=0.25), NAMED, False),
    ("no model: NVLink errors break a health tie", BASE, replace(BASE, nvlink_errors=0.25), ANY, False),
    ("health before errors", replace(BASE, xid_errors=1.0), replace(BASE, healthy=0.9), NAMED, False),
    ("errors before temperature", replace(BASE, cool=0.2), replace(BASE, cool=0.9, nvlink_errors=0.1), NAMED, True),
    (
        "an XID weighs more than NVLink errors",
        replace(BASE, nvlink_errors=1.0),
        replace(BASE, xid_errors=1.0),
        NAMED,
        False,
    ),
    ("a single GPU counts as full bandwidth", replace(BASE, bottleneck_gbps=None), BASE, ANY, False),
]


@pytest.mark.parametrize(("better", "worse", "names_model", "cooler_gpus"), [t[1:] for t in TIE_BREAKS],
                         ids=[t[0] for t in TIE_BREAKS])  # fmt: skip
def test_tie_breaks(better: Facts, worse: Facts, names_model: bool, cooler_gpus: bool) -> None:
    assert sort_key(better, names_model=names_model, cooler_gpus=cooler_gpus) > sort_key(
        worse, names_model=names_model, cooler_gpus=cooler_gpus
    )


@pytest.mark.parametrize("names_model", [True, False])
def test_temperature_is_ignored_unless_asked(names_model: bool) -> None:
    hot, cool = replace(BASE, cool=0.2), replace(BASE, cool=0.8)
    assert sort_key(hot, names_model=names_model, cooler_gpus=False) == sort_key(
        cool, names_model=names_model, cooler_gpus=False
    )


def test_the_score_never_goes_below_zero() -> None:
    worst = Facts(0.0, 0.0, 0.0, 0.0, 0.0, 8, 0, nvlink_errors=1.0, xid_errors=1.0, nic_errors=1.0)
    assert score(worst) == 0.0


def test_choice_note_says_why_not_the_fastest() -> None:
    h100 = replace(BASE, bottleneck_gbps=900.0, largest_before=72, largest_after=72)
    gb200 = replace(BASE, bottleneck_gbps=1800.0, largest_before=72, largest_after=70)
    a100 = replace(BASE, bottleneck_gbps=600.0, largest_before=72, largest_after=72)
    note = choice_note(h100, [gb200, a100], names_model=False)
    assert "1800 GB/s was free" in note and "from 72 to 70" in note and "larger job" in note
    assert "Best bandwidth available (900 GB/s" in choice_note(h100, [a100], names_model=False)
    assert choice_note(h100, [gb200], names_model=True) == ""  # the rule is for model-less requests
    assert choice_note(replace(BASE, bottleneck_gbps=None), [gb200], names_model=False) == ""
