"""The rail-aligned diagnosis's shortcuts at 8k GPUs (issue #15, Deliver 3; docs/benchmarks.md):
each must answer what the probes it spares answered. Both stores.

- placement_leaf_shares: every leaf's counter and how many of its hosts' counters hold each share,
  read once, answers placement_leaf_holds for every count and share (LeafShares), so the shares
  no leaf holds (`251xH100 rail-aligned`: 50 x 5, 83 x 3, 125 x 2, 249 x 1) need no probe each.
- placement_leaf_nics: a leaf's NICs bound its hosts, so a share needing more hosts than any
  leaf's NICs reads no leaf's hosts at all (placement_leaf_shares is read only past that bound).
- placement_leaves_fit with $ready (a probe, PlacementEngine.fits): a leaf opens only where its
  hosts' GPUs that pass the store-judged per-GPU constraints hold the share, so a probe reads no
  host maps of units whose counters hold it and whose GPUs do not (degraded ones); of the leaves
  a page opens, only the first's hosts (the engine reads a later one's itself where needed), and
  a part of a probe's page is at most engine.PROBE_PART_MOST leaves.
- `place` of a rail-aligned request read leaves first pages no leaf that placement_leaf_holds
  says holds none (a reserve of `251xH100 rail-aligned` paged every unit to find no window).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.placement import engine as engine_module
from graphsvc.placement import explain
from graphsvc.placement.counting import LeafShareBound, read_leaf_shares
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest, parse_request
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load, load_worn
from tests.unit.test_rail_probes import healthy, units


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sus=st.integers(1, 3),
    hosts=st.integers(1, 8),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.8),
    least_leaf=st.integers(1, 40),
    asks=st.lists(st.tuples(st.integers(1, 70), st.integers(0, 9)), min_size=6, max_size=12),
)
def test_leaf_shares_answer_what_placement_leaf_holds_answers(
    gateway: Gateway,
    sus: int,
    hosts: int,
    seed: int,
    occupancy: float,
    least_leaf: int,
    asks: list[tuple[int, int]],
) -> None:
    """For every count it was read for (at least its least leaf counter) and any share, and the
    most hosts per share: the statement's answer, on worn and partly taken units. LeafShareBound
    (the leaves' NICs first) answers the most hosts per share alike wherever the caller needs at
    least `least` of them."""

    async def scenario() -> None:
        await load_worn(gateway, units(sus, hosts, seed), random.Random(seed), occupancy)
        shares = await read_leaf_shares(PlacementEngine(gateway), least_leaf)
        for share in range(1, 9):
            for least in range(0, 12):
                bound = await LeafShareBound(PlacementEngine(gateway)).most_hosts(share, least_leaf, least)
                exact = shares.most_hosts(share)
                assert (bound >= least) == (exact >= least), (share, least, bound, exact)
                if exact >= least:
                    assert bound == exact, (share, least, bound, exact)
        for n, share in asks:
            n = max(n, least_leaf)
            held = bool(await gateway.read("placement_leaf_holds", {"n": n, "share": share}))
            assert shares.holds(n, share) == held, (n, share)
        for share in range(1, 9):
            for k in range(1, 10):
                if k * share < least_leaf:
                    continue
                held = bool(await gateway.read("placement_leaf_holds", {"n": k * share, "share": share}))
                assert (k <= shares.most_hosts(share)) == held, (k, share)

    asyncio.get_event_loop().run_until_complete(scenario())


class _NoBound:
    """The diagnosis without the leaf bound: every share probed as before."""

    def __init__(self, engine: Any) -> None:
        pass

    async def most_hosts(self, share: int, least_leaf: int, least: int = 0) -> int:
        return 1 << 30


_SEARCH_LEAVES = engine_module._Search.search_leaves


async def _unready(self: Any) -> None:
    """`place`'s leaf statement for a probe too: leaves opened by their counters, not $ready."""
    first_only, self.first_only = self.first_only, False
    try:
        await _SEARCH_LEAVES(self)
    finally:
        self.first_only = first_only


_ALIGNED_MAY_FIT = engine_module._Search.aligned_may_fit


async def _no_leaf_bound_in_place(self: Any) -> bool:
    """`place` as before: no placement_leaf_holds before its leaf pages (a probe asks it as it did)."""
    return await _ALIGNED_MAY_FIT(self) if self.first_only else True


def _said(reasons: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(r.constraint, r.message, r.nearest_feasible) for r in reasons]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sus=st.integers(1, 3),
    hosts=st.integers(2, 8),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.6),
    sizes=st.lists(st.integers(2, 70), min_size=2, max_size=4),
    nvlink=st.sampled_from([NVLinkRequirement.NONE, NVLinkRequirement.ANY]),
    unhealthy=st.booleans(),
)
def test_the_diagnosis_answers_alike_with_and_without_the_shortcuts(
    gateway: Gateway,
    sus: int,
    hosts: int,
    seed: int,
    occupancy: float,
    sizes: list[int],
    nvlink: NVLinkRequirement,
    unhealthy: bool,
) -> None:
    """The largest count and every reason of an unsplit rail-aligned request's diagnosis, with
    the leaf bounds (NICs, then shares), $ready probes (first window only, parts of at most
    PROBE_PART_MOST leaves, no free blocks), and the leaf bound before `place`'s leaf pages, and
    with none of them (each share probed, each probe's leaves opened by their counters in whole
    pages, `place` paging leaves: the code before)."""

    async def scenario() -> None:
        await load_worn(gateway, units(sus, hosts, seed), random.Random(seed), occupancy)
        for gpus in sizes:
            req = PlacementRequest(gpus=gpus, rail_aligned=True, nvlink=nvlink, exclude_unhealthy=unhealthy)
            now = await PlacementEngine(gateway).place(req)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(explain, "LeafShareBound", _NoBound)
                mp.setattr(engine_module._Search, "search_leaves", _unready)
                mp.setattr(engine_module._Search, "aligned_may_fit", _no_leaf_bound_in_place)
                before = await PlacementEngine(gateway).place(req)
            assert bool(now.candidates) == bool(before.candidates), req
            assert _said(now.infeasible) == _said(before.infeasible), req

    asyncio.get_event_loop().run_until_complete(scenario())


async def test_a_probe_opens_no_unit_whose_gpus_cannot_hold_its_share(gateway: Gateway, adopted: list[int]) -> None:
    """Four idle units of 32 hosts; units 1-3 each have two hosts with a degraded GPU, so only
    unit 4 (the last by name, all counters alike) holds 31 hosts x 8. The probe of 31 x 8 read
    units 1-3's hosts' GPU maps first (33 each; their counters hold it); now their statement
    finds their GPUs do not, and only unit 4's hosts are read. The shares no leaf holds
    (250 = 50 x 5, 249 = 83 x 3, 250 = 125 x 2, 249 x 1) asked placement_leaf_holds each; now
    one placement_leaf_shares answers them all."""
    cluster = units(4, 32, seed=7)
    healthy(cluster, {f"h100-su{su}-n{n:02d}" for su in (1, 2, 3) for n in (5, 9)})
    await load(gateway, cluster)
    result = await PlacementEngine(gateway).place(parse_request("251xH100 rail-aligned"))
    assert not result.candidates
    by = {r.constraint: r for r in result.infeasible}
    assert by["gpus"].nearest_feasible == "248xH100 rail-aligned"
    assert by["railAligned"].nearest_feasible == "251xH100"
    assert sum(adopted) <= 31 + 8, adopted  # unit 4's hosts (and a first probe's few); before: 132 and more
    holds = gateway.stats["placement_leaf_holds"].calls
    assert holds <= 2, holds  # the failed search's (251) and the fitting probe's (31 x 8); before: 6
    # 50, 83, 125 and 249 hosts, more than any leaf's 32 NICs: no leaf's hosts read for them.
    assert gateway.stats["placement_leaf_nics"].calls == 1
    assert "placement_leaf_shares" not in gateway.stats


def _calls(gateway: Gateway, prefix: str) -> int:
    return sum(stat.calls for name, stat in gateway.stats.items() if name.startswith(prefix))


async def test_a_refused_aligned_request_pages_no_leaf_and_a_probe_reads_one_window(
    gateway: Gateway, adopted: list[int]
) -> None:
    """Four idle units of 32 hosts; unit 1 has two hosts with a degraded GPU, so units 2-4 each
    hold 31 hosts x 8. A reserve of `251xH100 rail-aligned` (no even split under any leaf: 251
    hosts x 1) paged every unit's leaf before placement_leaf_holds said none holds it; now it
    asks that first and pages none, nor reads the cluster's free blocks beside a page. The
    diagnosis's probe of 31 x 8 reads unit 1, then units 2 and 3 in one part, both open: their
    66 host maps were read, now unit 2's 33 (and no free blocks for either probe of a share).
    The old code: 2 leaf pages for the reserve, 4 free-block reads, 66 and more host maps."""
    cluster = units(4, 32, seed=7)
    healthy(cluster, {"h100-su1-n05", "h100-su1-n09"})
    await load(gateway, cluster)
    engine = PlacementEngine(gateway)
    assert (await engine.place(parse_request("8xH100"))).candidates  # the engine has seen a host's free GPUs
    pages, blocks = _calls(gateway, "placement_leaves_fit"), _calls(gateway, "placement_cluster_blocks")
    refused = await engine.place(parse_request("251xH100 rail-aligned"), explain_infeasible=False)
    assert not refused.candidates
    assert _calls(gateway, "placement_leaves_fit") == pages
    assert _calls(gateway, "placement_cluster_blocks") == blocks
    adopted.clear()
    result = await engine.place(parse_request("251xH100 rail-aligned"))
    by = {r.constraint: r for r in result.infeasible}
    assert by["gpus"].nearest_feasible == "248xH100 rail-aligned"
    assert by["railAligned"].nearest_feasible == "251xH100"
    assert _calls(gateway, "placement_cluster_blocks") == blocks
    assert sum(adopted) <= 33 + 8, adopted  # unit 2's window (and the one-host probe's few)
    assert _calls(gateway, "placement_host_gpus") == 0  # unit 2 held it: no later window read
