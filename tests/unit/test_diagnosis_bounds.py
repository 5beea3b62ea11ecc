"""The diagnosis's counter bounds, its counts and its probe order (placement/explain.py, counting.py):
tests for every path of FreeBounds.most, and the largest-feasible search against brute force."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.placement.counting import (
    Counts,
    FreeBounds,
    HostGroup,
    LeafGroup,
    PoolGroup,
    fits,
    fits_under_a_leaf,
    surely_fits,
)
from graphsvc.placement.engine import SearchBudget
from graphsvc.placement.explain import _largest_aligned, _largest_feasible
from graphsvc.placement.request import parse_request

BOUNDS = FreeBounds(host=8, domain=72, leaf=150, total=4000, hosts_with_share=40, share=8)


@pytest.mark.parametrize(
    ("text", "most", "why"),
    [
        ("16xH100 nvlink=full-mesh", 72, "one NVLink domain: the fullest domain"),
        ("16xH100 same-nvlink-domain", 72, "one NVLink domain, however connected"),
        ("1xH100 nvlink=full-mesh", 4000, "one GPU has no pair: not a domain request"),
        ("16xH100 ib-hops<=0", 8, "one host only: the fullest host"),
        ("16xH100 ib-hops<=1", 150, "one leaf: the fullest leaf"),
        ("16xH100 ib-hops<=2", 150, "two hops: still leaves only"),
        ("16xH100 ib-hops<=3", 4000, "a pod: every free GPU"),
        ("16xH100", 4000, "no hop limit: every free GPU"),
        ("16xH100 per-host=8", 320, "a per-host share: hosts holding it, times the share"),
        ("16xH100 per-host=4", 4000, "another share than the bounds were read for: every free GPU"),
        ("16xH100 per-host=8 ib-hops<=1", 150, "a share under one leaf: the fullest leaf"),
    ],
)
def test_each_search_path_is_bounded_by_its_counter(text: str, most: int, why: str) -> None:
    assert BOUNDS.most(parse_request(text)) == most, why


def test_a_domain_request_for_one_gpu_needs_only_a_host_with_one_free() -> None:
    empty_domains = FreeBounds(host=3, domain=0, leaf=0, total=3, hosts_with_share=1, share=1)
    assert empty_domains.most(parse_request("4xH100 nvlink=full-mesh")) == 1


def largest(limit: int, asked: int, most: int, step: int = 1) -> tuple[int, list[int]]:
    """The search over a monotone `fits n <= limit`; returns the answer and the sizes probed."""
    probed: list[int] = []

    async def feasible(r) -> bool:  # type: ignore[no-untyped-def]
        probed.append(r.gpus)
        return bool(r.gpus <= limit)

    text = f"{asked}xH100" + (f" per-host={step}" if step > 1 else "")
    return asyncio.run(_largest_feasible(parse_request(text), feasible, most)), probed


@settings(max_examples=400, deadline=None)
@given(
    limit=st.integers(0, 3000),
    asked=st.integers(2, 3000),
    slack=st.integers(0, 400),
    step=st.sampled_from([1, 2, 4, 8]),
)
def test_the_largest_feasible_matches_brute_force(limit: int, asked: int, slack: int, step: int) -> None:
    asked = max(step * 2, asked - asked % step)
    most = limit + slack  # the counters never undercount what fits
    found, probed = largest(limit, asked, most, step)
    brute = max([n for n in range(0, asked, step) if n <= limit], default=0)
    assert found == brute
    assert all(n % step == 0 and 0 < n < asked for n in probed)


@pytest.mark.parametrize(
    ("limit", "asked", "most", "probes"),
    [
        (147, 2000, 147, 1),  # the counters are exact: one probe
        (147, 2000, 150, 4),  # three degraded GPUs: 150, 149, 147 (fits), 148
        (8, 1000, 8, 1),  # the fullest NVLink domain
        (0, 2000, 0, 0),  # nothing free: no probe
    ],
)
def test_probes_start_from_the_counters(limit: int, asked: int, most: int, probes: int) -> None:
    found, probed = largest(limit, asked, most)
    assert found == limit
    assert len(probed) == probes, probed


def aligned(hosts_fit: list[int], asked: int, bound: int) -> tuple[int, list[tuple[int, int]]]:
    """_largest_aligned over shares 1..len(hosts_fit): share p fits on k hosts when k <=
    hosts_fit[p - 1]; the counters allow `bound` GPUs. The answer and the (share, hosts) probed."""
    probed: list[tuple[int, int]] = []

    async def feasible(r) -> bool:  # type: ignore[no-untyped-def]
        share = r.gpus_per_host
        probed.append((share, r.gpus // share))
        return bool(r.gpus // share <= hosts_fit[share - 1])

    def allowed(r) -> int:  # type: ignore[no-untyped-def]
        return bound

    req = parse_request(f"{asked}xH100 rail-aligned")
    return asyncio.run(_largest_aligned(req, feasible, len(hosts_fit), allowed)), probed


@settings(max_examples=400, deadline=None)
@given(
    hosts_fit=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    asked=st.integers(2, 400),
    slack=st.integers(0, 64),
)
def test_the_largest_aligned_count_matches_brute_force(hosts_fit: list[int], asked: int, slack: int) -> None:
    bound = max(p * k for p, k in enumerate(hosts_fit, 1)) + slack  # the counters never undercount
    found, probed = aligned(hosts_fit, asked, bound)
    brute = max(p * min(k, (asked - 1) // p) for p, k in enumerate(hosts_fit, 1))
    assert found == brute
    assert all(0 < share * hosts < asked for share, hosts in probed)


THIRTY_HOSTS_PROBES = [
    (8, 1), (8, 31), (8, 2), (8, 4), (8, 8), (8, 16), (8, 23), (8, 27), (8, 29), (8, 30),
    (7, 35), (6, 41), (5, 49), (4, 61), (3, 81), (2, 121), (1, 241),
]  # fmt: skip


@pytest.mark.parametrize(
    ("hosts_fit", "bound", "probes"),
    [
        # 251 on 32 idle hosts: one host x 8 fits, then the counters' 31 hosts x 8 (1, 2, 4, 8, 16,
        # 24, 28, 30, 31 before); no other share can beat 248 (7 x 36 > 250) but 5 x 50 and 1 x 249.
        ([32] * 8, 256, [(8, 1), (8, 31), (5, 50), (3, 83), (2, 125), (1, 249)]),
        # Only 30 hosts hold 8 (two with a degraded GPU): 31 fails, then upwards from one host.
        ([32] * 7 + [30], 256, THIRTY_HOSTS_PROBES),
    ],
)
def test_each_share_first_probes_what_the_counters_allow(
    hosts_fit: list[int], bound: int, probes: list[tuple[int, int]]
) -> None:
    """A share whose most hosts fit needs one probe; where they do not (two hosts with a degraded
    GPU), it searches upwards from one host as before, one probe more."""
    found, probed = aligned(hosts_fit, 251, bound)
    assert found == max(p * min(k, 250 // p) for p, k in enumerate(hosts_fit, 1))
    assert probed == probes


def group(name: str | None, cluster: str | None = None, **counts: int) -> HostGroup:
    fields = {"counter": 8, "share_most": 0, "hosts": 1, "pool": 0, "host_most": 0, "doubt": 0, "lapsed": 0}
    return HostGroup(site=name, cluster=cluster, candidates=10, **(fields | counts))


def site(name: str) -> list[HostGroup]:
    """Five hosts with 8 free by their counters: three give 8 eligible GPUs, two give 3."""
    return [
        group(name, share_most=8, hosts=3, pool=24, host_most=8),
        group(name, share_most=3, hosts=2, pool=6, host_most=3),
    ]


A, B = site("a"), site("b")


@pytest.mark.parametrize(
    ("text", "rows", "answer", "why"),
    [
        ("30xH100", A, True, "one site's eligible GPUs cover it"),
        ("31xH100", A, False, "not enough eligible GPUs (the counters count refused ones too)"),
        ("31xH100", A + B, False, "never across sites"),
        ("31xH100 cross-site", A + B, True, "across sites when asked"),
        ("31xH100 site=b", A + B, False, "only the named site"),
        ("8xH100", [group("a", host_most=8)], True, "one host holds it, whatever its NICs"),
        ("24xH100 per-host=8", A, True, "three hosts hold the share"),
        ("32xH100 per-host=8", A, False, "four hosts do not"),
        ("9xH100 per-host=3", A, True, "any host holds a share of 3"),
        ("16xH100 per-host=8", [group("a", counter=4, share_most=8, hosts=2, pool=16)], False,
         "the counters cannot hold the shares: the search gives up"),
        ("8xH100 per-host=8", [group("a", share_most=7, pool=7, host_most=7)], False,
         "a share of the whole request: one host only"),
        ("41xH100", [group("a", hosts=5, pool=50)], False, "the counters cannot hold it: the search gives up"),
        ("8xH100 nvlink=any", A, None, "NVLink: not countable"),
        ("8xH100 ib-hops<=3", A, None, "a hop limit: not countable"),
        ("8xH100 rail-aligned", A, None, "rails: not countable"),
        ("8xH100", [group("a", pool=30, doubt=1)], None, "a model the cached list lacks"),
        ("8xH100", [group("a", pool=30, lapsed=1)], None, "a lapsed lease"),
        ("8xH100", [HostGroup("a", 8, 8, 5, 30, 8, 0, 0, candidates=5000)], None, "more hosts than the search reads"),
        ("8xH100", [], False, "no host with a free GPU"),
    ],
)  # fmt: skip
def test_the_counts_decide_countable_shapes(text: str, rows: list[HostGroup], answer: bool | None, why: str) -> None:
    assert fits(parse_request(text), rows, limit=4000) is answer, why


@pytest.mark.parametrize(("hosts", "leaves"), [(4001, 0), (3990, 10), (4000, 0)])
def test_no_count_is_read_when_the_search_could_spend_its_budget_first(hosts: int, leaves: int) -> None:
    """The host and leaf searches before the wide read stop once the units they scanned reach the
    budget: with as many hosts and leaves holding a free GPU, the counts would not say what it finds."""
    engine: Any = SimpleNamespace(budget=SearchBudget(units=4000))  # no gateway: nothing may be read
    many = replace(BOUNDS, hosts_with_free=hosts, leaves_with_free=leaves)
    for text in ("9xH100", "30xH100 ib-hops<=1"):
        assert asyncio.run(Counts(engine, many).fits(parse_request(text))) is None


def leaf(name: str, counter: int, cluster: str | None = "c1", **counts: int) -> LeafGroup:
    fields = {"share_most": 8, "hosts": 1, "pool": 8, "doubt": 0, "lapsed": 0}
    site = {"c1": "a", "c2": "b"}.get(cluster or "")
    return LeafGroup(leaf=name, leaf_counter=counter, cluster=cluster, site=site, **(fields | counts))


SITE_A = [group("a", cluster="c1", host_most=8), group("b", cluster="c2", host_most=8)]
# Leaf l1: three hosts giving 8 and two giving 3 (30 eligible, 40 by the counters).
L1 = [leaf("l1", 40, share_most=8, hosts=3, pool=24), leaf("l1", 40, share_most=3, hosts=2, pool=6)]


@pytest.mark.parametrize(
    ("text", "leaves", "answer", "why"),
    [
        ("30xH100 ib-hops<=1", L1, True, "one leaf's eligible GPUs cover it"),
        ("31xH100 ib-hops<=1", L1, False, "not under one leaf"),
        ("31xH100 ib-hops<=2", [*L1, leaf("l2", 40, pool=31, hosts=4)], True, "another leaf holds it"),
        ("41xH100 ib-hops<=1", [leaf("l1", 40, pool=50, hosts=7)], False, "the leaf's counter cannot hold it"),
        ("24xH100 per-host=8 ib-hops<=1", L1, True, "three hosts under the leaf hold the share"),
        ("32xH100 per-host=8 ib-hops<=1", L1, False, "four do not"),
        ("8xH100 ib-hops<=1", [], True, "one host holds it"),
        ("9xH100 ib-hops<=0", L1, False, "no hop: one host only"),
        ("8xH100 ib-hops<=0", [], True, "no hop, one host holds it"),
        ("30xH100 ib-hops<=1 site=b", L1, False, "the leaf's hosts are of another site"),
        ("30xH100 ib-hops<=1", [leaf("l1", 40, cluster="c1", pool=15, hosts=2),
                                leaf("l1", 40, cluster="c2", pool=15, hosts=2)], None, "a leaf across sites"),
        ("30xH100 ib-hops<=1", [leaf("l1", 40, cluster=None, pool=30, hosts=4)], True, "hosts of no site"),
        ("30xH100 ib-hops<=1", [leaf("l1", 40, pool=30, hosts=4, lapsed=1)], None, "a lapsed lease"),
        ("30xH100 ib-hops<=3", L1, None, "a pod: searched"),
    ],
)  # fmt: skip
def test_the_counts_decide_one_leaf(text: str, leaves: list[LeafGroup], answer: bool | None, why: str) -> None:
    assert fits_under_a_leaf(parse_request(text), SITE_A, leaves, limit=4000, hosts=10) is answer, why


def test_one_leaf_is_not_counted_when_the_search_would_not_read_every_leaf() -> None:
    assert fits_under_a_leaf(parse_request("30xH100 ib-hops<=1"), SITE_A, L1, limit=4000, hosts=4000) is None


def pool(site: str | None, counted: int, counters: int = 100, candidates: int = 10) -> PoolGroup:
    return PoolGroup(site=site, cluster=site, pool=counted, candidates=candidates, counters=counters)


@pytest.mark.parametrize(
    ("text", "rows", "answer", "why"),
    [
        ("30xH100", [pool("a", 30)], True, "one site's counted GPUs cover it"),
        ("30xH100", [pool("a", 29)], False, "fewer counted: not proven (the full counts say)"),
        ("30xH100", [pool("a", 30, counters=29)], False, "the counters cannot hold it: the search gives up"),
        ("30xH100", [pool("a", 30, candidates=4001)], False, "more hosts than the search reads"),
        ("30xH100", [pool("a", 15), pool("b", 15)], False, "never across sites"),
        ("30xH100 cross-site", [pool("a", 15), pool("b", 15)], True, "across sites when asked"),
        ("30xH100 site=b", [pool("a", 30)], False, "only the named site"),
        ("30xH100", [pool(None, 30)], True, "hosts of no site"),
        ("30xH100", [], False, "nothing counted"),
    ],
)  # fmt: skip
def test_a_count_up_to_the_request_proves_it_fits(text: str, rows: list[PoolGroup], answer: bool, why: str) -> None:
    assert surely_fits(parse_request(text), rows, limit=4000) is answer, why


class CountingGateway:
    """Answers the count statements with fixed rows and records what was read."""

    def __init__(self, pool_rows: list[dict[str, Any]], wide_rows: list[dict[str, Any]]) -> None:
        self.pool_rows, self.wide_rows = pool_rows, wide_rows
        self.reads: list[tuple[str, dict[str, Any]]] = []

    async def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.reads.append((name, {k: params[k] for k in ("cover", "least", "least_leaf") if k in params}))
        return {"placement_fullest_pool": self.pool_rows, "placement_wide_counts": self.wide_rows}.get(name, [])


def counting_engine(gw: CountingGateway) -> Any:
    async def models() -> list[str]:
        return ["NVIDIA H100 80GB HBM3"]

    return SimpleNamespace(gw=gw, budget=SearchBudget(units=4000), models=models, clock=lambda: 1000.0,
                           stale_after_s=None)  # fmt: skip


WIDE = [{"site": None, "cluster": "c", "counter": 8, "share_most": 8, "hosts": 5, "pool": 40, "host_most": 8,
         "doubt": 0, "lapsed": 0, "candidates": 5}]  # fmt: skip


def test_a_probe_proven_by_its_partial_count_reads_no_full_count() -> None:
    gw = CountingGateway([{"site": None, "cluster": "c", "pool": 30, "candidates": 5, "counters": 40}], WIDE)
    counts = Counts(counting_engine(gw), BOUNDS)
    assert asyncio.run(counts.fits(parse_request("30xH100"))) is True
    assert asyncio.run(counts.fits(parse_request("20xH100"))) is True  # smaller: proven already, nothing read
    assert gw.reads == [("placement_fullest_pool", {"cover": 37})]


def test_a_probe_the_partial_count_does_not_prove_is_counted_in_full_once() -> None:
    gw = CountingGateway([{"site": None, "cluster": "c", "pool": 40, "candidates": 5, "counters": 40}], WIDE)
    counts = Counts(counting_engine(gw), BOUNDS)
    assert asyncio.run(counts.fits(parse_request("41xH100"))) is False
    assert asyncio.run(counts.fits(parse_request("40xH100"))) is True
    assert asyncio.run(counts.fits(parse_request("16xH100 per-host=8"))) is True
    assert gw.reads == [("placement_fullest_pool", {"cover": 51}), ("placement_wide_counts", {"least": 1})]


def test_a_per_host_share_counts_only_hosts_whose_counters_hold_it() -> None:
    gw = CountingGateway([], WIDE)
    counts = Counts(counting_engine(gw), BOUNDS)
    asyncio.run(counts.fits(parse_request("16xH100 per-host=8")))
    asyncio.run(counts.fits(parse_request("24xH100 per-host=8")))  # the same share: read already
    asyncio.run(counts.fits(parse_request("16xH100 per-host=4")))  # a smaller share: the hosts holding 4 too
    asyncio.run(counts.fits(parse_request("16xH100 per-host=8")))  # served by the read for 4
    assert gw.reads == [("placement_wide_counts", {"least": 8}), ("placement_wide_counts", {"least": 4})]


def test_one_leaf_probes_read_the_leaves_whose_counters_hold_them() -> None:
    gw = CountingGateway([], WIDE)
    counts = Counts(counting_engine(gw), BOUNDS)
    for text in ("149xH100 ib-hops<=1", "148xH100 ib-hops<=1", "140xH100 ib-hops<=1", "120xH100 ib-hops<=1"):
        asyncio.run(counts.fits(parse_request(text)))
    asyncio.run(counts.fits(parse_request("8xH100 ib-hops<=1")))  # a host could hold it: it does, no leaf read
    assert gw.reads == [
        ("placement_leaf_counts", {"least": 1, "least_leaf": 140}),  # a sixteenth below: 148 and 140 too
        ("placement_leaf_counts", {"least": 1, "least_leaf": 113}),
        ("placement_wide_counts", {"least": 8}),
    ]
