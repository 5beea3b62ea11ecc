"""The rail-aligned diagnosis's shortcuts at 8k GPUs (issue #15, Deliver 3; docs/benchmarks.md):
each must answer what the probes it spares answered. Both stores.

- placement_leaf_shares: every leaf's counter and how many of its hosts' counters hold each share,
  read once, answers placement_leaf_holds for every count and share (LeafShares), so the shares
  no leaf holds (`251xH100 rail-aligned`: 50 x 5, 83 x 3, 125 x 2, 249 x 1) need no probe each.
- placement_leaves_fit with $ready (a probe, PlacementEngine.fits): a leaf opens only where its
  hosts' GPUs that pass the store-judged per-GPU constraints hold the share, so a probe reads no
  host maps of units whose counters hold it and whose GPUs do not (degraded ones).
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
from graphsvc.placement.counting import read_leaf_shares
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest, parse_request
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load, occupy
from tests.integration.test_counting_oracle import worn
from tests.queries import with_test_queries
from tests.unit.test_rail_probes import healthy, units


async def _worn_units(gateway: Gateway, sus: int, hosts: int, seed: int, occupancy: float) -> None:
    await with_test_queries(gateway).write("reset_graph")
    rng = random.Random(seed)
    cluster = units(sus, hosts, seed)
    worn(cluster, rng)
    await load(gateway, cluster)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < occupancy])


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
    most hosts per share: the statement's answer, on worn and partly taken units."""

    async def scenario() -> None:
        await _worn_units(gateway, sus, hosts, seed, occupancy)
        shares = await read_leaf_shares(PlacementEngine(gateway), least_leaf)
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

    async def most_hosts(self, share: int, least_leaf: int) -> int:
        return 1 << 30


_SEARCH_LEAVES = engine_module._Search.search_leaves


async def _unready(self: Any) -> None:
    """`place`'s leaf statement for a probe too: leaves opened by their counters, not $ready."""
    first_only, self.first_only = self.first_only, False
    try:
        await _SEARCH_LEAVES(self)
    finally:
        self.first_only = first_only


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
    the leaf bound and $ready probes, and with neither (each share probed, each probe's leaves
    opened by their counters: the code before)."""

    async def scenario() -> None:
        await _worn_units(gateway, sus, hosts, seed, occupancy)
        for gpus in sizes:
            req = PlacementRequest(gpus=gpus, rail_aligned=True, nvlink=nvlink, exclude_unhealthy=unhealthy)
            now = await PlacementEngine(gateway).place(req)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(explain, "LeafShareBound", _NoBound)
                mp.setattr(engine_module._Search, "search_leaves", _unready)
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
    assert gateway.stats["placement_leaf_shares"].calls == 1
