"""Rail-aligned multi-host sets (graphsvc.placement.rails): a table per rule."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.placement.model import Gpu, Host
from graphsvc.placement.rails import aligned, even_shares, pick_shares, rail_pairs
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest


def gpu(host: str, index: int, rail: int | None, leaf: str | None, direct: tuple[int, ...] = ()) -> Gpu:
    g = Gpu(
        uuid=f"{host}/g{index}", index=index, host=host, model="H100", memory_mib=81559, state="free",
        health="ok", temperature_c=None, utilization_pct=None, nvlink_domain=f"{host}-nvl",
        domain_kind="direct", nic=None if rail is None else f"{host}/nic{rail}", rail=rail,
        nic_rate_gbps=400.0, via="pcie-switch", leaf=leaf,
    )  # fmt: skip
    g.direct = {f"{host}/g{peer}": 50.0 for peer in direct}
    return g


def host(name: str, unit: str, rails: range = range(8), taken: tuple[int, ...] = ()) -> tuple[Host, list[Gpu]]:
    """An 8-GPU host of a rail-optimised unit: GPU i on rail i, rail i's leaf `{unit}-leaf{i}`."""
    gpus = [gpu(name, r, r, f"{unit}-leaf{r}") for r in rails if r not in taken]
    return Host(name, None, unit, [f"{unit}-leaf0"], "pod", None, gpus), gpus


@pytest.mark.parametrize(
    ("n", "most", "shares"),
    [
        (12, 8, [6, 4, 3, 2, 1]),  # never 8 + 4: their hosts would use different rails
        (16, 8, [8, 4, 2, 1]),
        (8, 8, [4, 2, 1]),  # one host holds all 8: the caller's case, not a split
        (251, 8, [1]),  # a prime: one GPU on each of 251 hosts or nothing
        (4044, 8, [6, 4, 3, 2, 1]),
        (6, 4, [3, 2, 1]),
        (5, 0, []),
    ],
)
def test_even_shares_divide_the_request_largest_first(n: int, most: int, shares: list[int]) -> None:
    assert even_shares(n, most) == shares


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ([gpu("a", 0, 0, "L0"), gpu("b", 0, 0, "L0")], True),
        ([gpu("a", 0, 0, "L0"), gpu("a", 1, 1, "L1"), gpu("b", 0, 0, "L0"), gpu("b", 1, 1, "L1")], True),
        ([gpu("a", 0, 0, "L0"), gpu("b", 1, 1, "L1")], False),  # different rails
        ([gpu("a", 0, 0, "L0"), gpu("b", 0, 0, "M0")], False),  # rail 0 on another leaf
        ([gpu("a", 0, 0, "L0"), gpu("b", 0, None, None)], False),  # no cabled rail NIC
        (
            [gpu("a", 0, 0, "L0"), gpu("a", 1, 0, "L0"), gpu("b", 0, 0, "L0"), gpu("b", 1, 0, "L0")],
            False,
        ),  # one rail twice
        ([gpu("a", 0, 0, "L0"), gpu("a", 1, 1, "L1"), gpu("b", 0, 0, "L0")], False),  # uneven shares
    ],
)
def test_aligned_means_the_same_pairs_one_gpu_each(gpus: list[Gpu], expected: bool) -> None:
    assert aligned(gpus) is expected


def test_rail_pairs_groups_gpus_sharing_a_nic_and_leaves_out_uncabled_ones() -> None:
    pool = [gpu("a", 1, 0, "L0"), gpu("a", 0, 0, "L0"), gpu("a", 2, None, None), gpu("a", 3, 1, None)]
    pairs = rail_pairs(pool)
    assert list(pairs) == [(0, "L0")]
    assert [g.index for g in pairs[(0, "L0")]] == [0, 1]


def names(chosen: list[Gpu] | None) -> list[str]:
    return sorted(g.uuid for g in chosen or [])


def test_the_unit_that_holds_the_request_is_found_when_the_first_host_is_in_another() -> None:
    """Seeded from the first host only, a small unit first in the order hid a large one."""
    options = [host("a1", "A"), host("b1", "B"), host("b2", "B"), host("b3", "B")]
    chosen = pick_shares(options, 8, 3, PlacementRequest(gpus=24))
    assert {g.host for g in chosen or []} == {"b1", "b2", "b3"}
    assert aligned(chosen or [])


def test_hosts_share_the_rails_all_of_them_have_free() -> None:
    options = [host("a1", "A", taken=(0, 1)), host("a2", "A", taken=(6, 7)), host("a3", "A")]
    chosen = pick_shares(options, 4, 3, PlacementRequest(gpus=12))
    assert chosen is not None and aligned(chosen)
    assert {g.rail for g in chosen} == {2, 3, 4, 5}
    assert pick_shares(options, 5, 3, PlacementRequest(gpus=15)) is None  # only rails 2-5 are free on all three


def test_too_few_hosts_on_common_rails_is_none() -> None:
    options = [host("a1", "A"), host("b1", "B")]
    assert pick_shares(options, 8, 2, PlacementRequest(gpus=16)) is None


def test_an_nvlink_share_takes_another_gpu_on_a_shared_nic() -> None:
    """Two GPUs per NIC (a DGX-1): the lowest-index GPU on each rail is not connected, the other is."""

    def dgx(name: str) -> tuple[Host, list[Gpu]]:
        gpus = [
            gpu(name, 0, 0, "L0", direct=()),
            gpu(name, 1, 0, "L0", direct=(2,)),
            gpu(name, 2, 1, "L1", direct=(1,)),
            gpu(name, 3, 1, "L1", direct=()),
        ]
        return Host(name, None, "A", ["L0"], "pod", None, gpus), gpus

    req = PlacementRequest(gpus=4, gpus_per_host=2, nvlink=NVLinkRequirement.FULL_MESH)
    chosen = pick_shares([dgx("h1"), dgx("h2")], 2, 2, req)
    assert names(chosen) == ["h1/g1", "h1/g2", "h2/g1", "h2/g2"]
    no_link = PlacementRequest(gpus=4, gpus_per_host=2)
    assert names(pick_shares([dgx("h1"), dgx("h2")], 2, 2, no_link)) == ["h1/g0", "h1/g2", "h2/g0", "h2/g2"]


def test_the_nvlink_requirement_is_met_on_every_host_not_only_the_first() -> None:
    """A rail set whose share is connected on the first host only is passed over."""

    def partial(name: str, links: dict[int, tuple[int, ...]]) -> tuple[Host, list[Gpu]]:
        gpus = [gpu(name, i, i, f"L{i}", direct=links.get(i, ())) for i in range(3)]
        return Host(name, None, "A", ["L0"], "pod", None, gpus), gpus

    first = partial("h1", {0: (1, 2), 1: (0, 2), 2: (0, 1)})  # all three connected
    second = partial("h2", {1: (2,), 2: (1,)})  # only rails 1 and 2
    req = PlacementRequest(gpus=4, gpus_per_host=2, nvlink=NVLinkRequirement.FULL_MESH)
    chosen = pick_shares([first, second], 2, 2, req)
    assert chosen is not None and {g.rail for g in chosen} == {1, 2}


def test_an_early_host_does_not_narrow_the_rails_past_the_hosts_that_fit() -> None:
    """Taking hosts while their common rails stayed enough, the first two hosts narrowed them to
    rails 0, 1 and 5, and no third host has rail 5; rails 0, 1 and 6 fit three (a review's case)."""
    free = [(0, 1, 2, 3, 5), (0, 1, 5, 6), (0, 1, 2, 4, 6), (0, 1, 3, 4, 6, 7), (5, 6, 7)]
    options = [
        host(f"h{i}", "A", rails=range(8), taken=tuple(r for r in range(8) if r not in f)) for i, f in enumerate(free)
    ]
    chosen = pick_shares(options, 3, 3, PlacementRequest(gpus=9, gpus_per_host=3))
    assert chosen is not None and aligned(chosen)
    assert {g.host for g in chosen} == {"h1", "h2", "h3"} and {g.rail for g in chosen} == {0, 1, 6}


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.sets(st.integers(0, 5), max_size=6), min_size=1, max_size=7),
    p=st.integers(1, 4),
    count=st.integers(1, 5),
)
def test_a_set_is_found_whenever_brute_force_finds_one(free: list[set[int]], p: int, count: int) -> None:
    """Hosts of one unit (rail i on leaf i) with random free rails: some `count` hosts share p free
    rails exactly when the pick finds a set, and what it finds is aligned."""
    options = [
        host(f"h{i}", "A", rails=range(6), taken=tuple(r for r in range(6) if r not in f)) for i, f in enumerate(free)
    ]
    chosen = pick_shares(options, p, count, PlacementRequest(gpus=p * count, gpus_per_host=p))
    exists = any(sum(set(rails) <= f for f in free) >= count for rails in itertools.combinations(range(6), p))
    assert (chosen is not None) == exists
    if chosen is not None:
        assert aligned(chosen) and len(chosen) == p * count and len({g.host for g in chosen}) == count


def test_an_idle_unit_is_found_behind_many_fragmented_ones() -> None:
    """Sixty units of 32 hosts, each host with a different four free rails (no three share four),
    best fit first, and an idle unit last: a cap on the rail sets tried over the units ran out
    before the idle one (a review's case)."""
    patterns = list(itertools.combinations(range(8), 4))
    options = [
        host(f"u{u}h{i}", f"U{u}", taken=tuple(r for r in range(8) if r not in patterns[i]))
        for u in range(60)
        for i in range(32)
    ]
    options += [host(f"idle{i}", "IDLE") for i in range(32)]
    chosen = pick_shares(options, 4, 3, PlacementRequest(gpus=12, gpus_per_host=4))
    assert chosen is not None and {g.host for g in chosen} == {"idle0", "idle1", "idle2"}


def test_sets_from_other_leaves_do_not_crowd_out_the_one_that_fits() -> None:
    """Two hosts share rails 4-7 on leaf Z only; 64 others each reach one of those and three pairs
    on two other leaves: the one fitting set was the last of 165 a group listed (a review's case)."""

    def odd(name: str, pairs: list[tuple[int, str]]) -> tuple[Host, list[Gpu]]:
        gpus = [gpu(name, i, r, leaf) for i, (r, leaf) in enumerate(pairs)]
        return Host(name, None, "X", ["Z"], "pod", None, gpus), gpus

    noise = [
        odd(f"n{r}{low[0]}{''.join(leaves)}", [(r, "Z"), *zip(low, leaves, strict=True)])
        for r in range(4, 8)
        for low in ((0, 1, 2), (1, 2, 3))
        for leaves in itertools.product("ab", repeat=3)
    ]  # 64 hosts, no two sharing four pairs
    fits = [odd(name, [(r, "Z") for r in range(4, 8)]) for name in ("x1", "x2")]
    chosen = pick_shares([*noise, *fits], 4, 2, PlacementRequest(gpus=8, gpus_per_host=4))
    assert chosen is not None and {g.host for g in chosen} == {"x1", "x2"}
