"""The replay's metrics, traces, statistics and lookahead on hand-built cases (no store)."""

from __future__ import annotations

import math

import pytest

from graphsvc.bench.lookahead import largest_free_domain, pick
from graphsvc.bench.metrics import best_bandwidth, measure
from graphsvc.bench.policies import HostView, Topology
from graphsvc.bench.stats import compare, spread
from graphsvc.bench.traces import shaped_jobs, trace_stats


def mixed(h100_free: int = 8, gb200_free: int = 0) -> tuple[Topology, dict[str, str]]:
    """One H100 board (one 8-GPU NVLink domain), one A100 host of bridged pairs, one L40S host
    (no NVLink), optionally a 4-GPU GB200 tray in a rack-wide domain; all on one leaf."""
    hosts = {
        "h100": HostView("h100", "r1", frozenset(["L1"]), "pod", [(f"h{i}", "h100/nvl") for i in range(8)]),
        "a100": HostView("a100", "r1", frozenset(["L1"]), "pod", [(f"a{i}", f"a100/pair{i // 2}") for i in range(8)]),
        "l40s": HostView("l40s", "r1", frozenset(["L1"]), "pod", [(f"l{i}", None) for i in range(4)]),
        "gb200": HostView("gb200", "r2", frozenset(["L1"]), "pod", [(f"g{i}", "rack1") for i in range(4)]),
    }
    models = {u: name.upper() for name, h in hosts.items() for u, _ in h.gpus}
    t = Topology(hosts)
    t.free = {f"h{i}" for i in range(h100_free)} | {f"a{i}" for i in range(8)} | {f"l{i}" for i in range(4)}
    t.free |= {f"g{i}" for i in range(gb200_free)}
    return t, models


def test_slowdown_is_against_the_best_on_the_cluster_not_the_chosen_model() -> None:
    t, models = mixed()
    best = best_bandwidth(t, models, 2)
    assert best == 900.0  # a free H100 board beats an A100 pair (600)
    on_a100 = measure(t, models, ["a0", "a1"], best)
    assert on_a100.bottleneck_gbps == 600.0 and on_a100.slowdown == pytest.approx(1.5)  # 900 / 600
    assert measure(t, models, ["h0", "h1"], best).slowdown == pytest.approx(1.0)
    # Two L40S GPUs of one host talk over PCIe (32 GB/s): 900 / 32.
    assert measure(t, models, ["l0", "l1"], best).slowdown == pytest.approx(900 / 32)
    # Across hosts: one NIC per GPU, 50 GB/s.
    assert measure(t, models, ["h0", "a0"], best).slowdown == pytest.approx(900 / 50)


@pytest.mark.parametrize(
    ("h100_free", "gb200_free", "n", "best"),
    [
        (8, 0, 2, 900.0),  # an H100 board holds it
        (1, 0, 2, 600.0),  # only A100 pairs have two free GPUs in one domain
        (1, 0, 3, 50.0),  # no domain holds 3: across hosts (NIC 50) beats one host's PCIe (32)
        (8, 4, 2, 1800.0),  # the GB200 rack is the best there is
        (8, 4, 8, 900.0),  # the GB200 rack has only 4 free
        (8, 0, 1, None),  # one GPU has no link
        (0, 0, 40, None),  # 40 do not fit at all
    ],
)
def test_best_bandwidth_at_that_moment(h100_free: int, gb200_free: int, n: int, best: float | None) -> None:
    t, models = mixed(h100_free, gb200_free)
    assert best_bandwidth(t, models, n) == best


def test_shaped_trace_hits_its_share_and_load() -> None:
    jobs = shaped_jobs(3000, seed=1, cluster_gpus=512, load=0.8, large_share=0.5)
    s = trace_stats(jobs, 512)
    assert 0.4 < s.large_gpu_hour_share < 0.6
    assert 0.65 < s.offered_load < 0.95
    assert jobs == shaped_jobs(3000, seed=1, cluster_gpus=512, load=0.8, large_share=0.5)  # seeded
    assert max(j.gpus for j in jobs) <= 256  # at most half the cluster
    with pytest.raises(ValueError, match="large_share"):
        shaped_jobs(10, seed=1, cluster_gpus=512, load=0.8, large_share=1.0)


def test_spread_and_paired_verdicts() -> None:
    s = spread([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s is not None and s.mean == 3.0 and (s.lo, s.hi) == (1.0, 5.0)
    assert s.half95 == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5))
    assert s.text() == "3.0 [1.0-5.0]"
    # Every seed ahead by about 10 with little noise: a lead, although the unpaired ranges overlap.
    ours, theirs = [410.0, 380.0, 452.0, 399.0, 421.0], [400.0, 371.0, 441.0, 390.0, 410.0]
    lead = compare(ours, theirs, higher_is_better=True)
    assert lead is not None and lead.verdict == "lead"
    # One seed behind: no lead, whatever the mean says.
    mixed_seeds = compare([410.0, 360.0, 452.0, 399.0, 421.0], theirs, higher_is_better=True)
    assert mixed_seeds is not None and mixed_seeds.verdict == "tie"
    # Lower is better (slowdown): consistently lower is a lead.
    lower = compare([1.0, 1.1, 1.0, 1.2, 1.0], [1.5, 1.6, 1.4, 1.7, 1.5], higher_is_better=False)
    assert lower is not None and lower.verdict == "lead"
    behind = compare([1.5, 1.6, 1.4, 1.7, 1.5], [1.0, 1.1, 1.0, 1.2, 1.0], higher_is_better=False)
    assert behind is not None and behind.verdict == "behind"
    assert compare([1.0], [2.0], higher_is_better=True) is None  # one seed proves nothing
    same = compare([900.0, 850.0], [900.0, 850.0], higher_is_better=True)
    assert same is not None and same.verdict == "equal" and same.text() == "equal (2 seeds)"


def test_lookahead_keeps_the_domain_the_next_job_needs() -> None:
    t, models = mixed(h100_free=8)
    # The service offered an A100 pair and two GPUs of the only free H100 board; an 8-GPU job is next.
    options = [["h0", "h1"], ["a0", "a1"]]
    assert pick(t, models, options, upcoming=[8]) == 1
    assert t.free == mixed(h100_free=8)[0].free  # judged on a copy: nothing taken
    # Nothing large waits: the service's first choice stands unless it shrinks the largest domain.
    assert pick(t, models, options, upcoming=[1, 1]) == 1  # the 8-GPU board stays whole
    assert pick(t, models, [["a0", "a1"], ["a2", "a3"]], upcoming=[2]) == 0  # equal: the service's rank
    assert largest_free_domain(t) == 8
