"""The rail-aligned diagnosis reads less where an earlier read already answers (issue #15, Deliver 3;
docs/benchmarks.md): both stores.

- A relaxed probe the failed search's leaf counters refuse (explain.refused_by_leaves): `251xH100
  rail-aligned` without GPU-NIC affinity is the same 251 GPUs, which placement_leaf_holds (read by
  the failed search, cached in its loader) says no leaf holds, and no host holds 251 alone: the
  probe ran the one-host statement (and a lapsed-lease check) to find nothing.
- placement_leaves_fit returns no members for a leaf it gives no window (the engine judges none).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.placement import explain
from graphsvc.placement.engine import PlacementEngine, gpu_filters
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest, parse_request
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load, load_worn
from tests.unit.test_diag_leaf_shares import _said
from tests.unit.test_rail_probes import healthy, units


def _calls(gateway: Gateway, prefix: str) -> int:
    return sum(stat.calls for name, stat in gateway.stats.items() if name.startswith(prefix))


async def test_a_relaxation_the_leaf_counters_refuse_runs_no_host_search(gateway: Gateway) -> None:
    """Four idle units of 32 hosts, two hosts of unit 1 with a degraded GPU. The diagnosis of
    `251xH100 rail-aligned` relaxes GPU-NIC affinity: still 251 GPUs rail-aligned, which no leaf
    holds (251 hosts x 1) and no host holds alone. Before, that probe ran placement_hosts_fit for
    251 GPUs on one host: three one-host statements in all (the failed search's, that probe's,
    the one-host probe of 8); now two. The answer is the same (and with the shortcut off)."""
    cluster = units(4, 32, seed=7)
    healthy(cluster, {"h100-su1-n05", "h100-su1-n09"})
    await load(gateway, cluster)
    result = await PlacementEngine(gateway).place(parse_request("251xH100 rail-aligned"))
    assert not result.candidates
    by = {r.constraint: r for r in result.infeasible}
    assert by["gpus"].nearest_feasible == "248xH100 rail-aligned"
    assert by["railAligned"].nearest_feasible == "251xH100"
    assert "gpuNicAffinity" not in by
    one_host = _calls(gateway, "placement_hosts_fit")  # its `_scan` form on a cluster this small
    assert one_host == 2, one_host
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(explain, "refused_by_leaves", lambda *_: False)
        before = await PlacementEngine(gateway).place(parse_request("251xH100 rail-aligned"))
    assert _said(before.infeasible) == _said(result.infeasible)


async def test_a_leaf_with_no_window_comes_back_without_its_members(gateway: Gateway) -> None:
    """A probe's page of 31 x 8 over the four units: unit 1 (two hosts with a degraded GPU) has no
    window, and its 32 members are not returned (the engine judges no such leaf); unit 2's are."""
    cluster = units(4, 32, seed=7)
    healthy(cluster, {"h100-su1-n05", "h100-su1-n09"})
    await load(gateway, cluster)
    engine = PlacementEngine(gateway)
    req = parse_request("248xH100 per-host=8 rail-aligned")
    params: dict[str, Any] = {
        "exclude": [], "model": "h100", "prefilter_models": [], "known": [""],
        "filters": gpu_filters(req, rail_up=True), "now": engine.clock(), "stale_before": 0.0, "virtual_free": [],
        "ready": True, "min_free": 248, "gpus": 248, "per_host": 8, "host_min": 8, "need": 31, "extra": 2,
        "fullest_first": False, "fullest_leaves": False, "even": False, "skip": 0, "limit": 2,
    }  # fmt: skip
    rows = await gateway.read("placement_leaves_fit", params)
    found = {u["unit"]: u for u in rows[0]["found"]}
    assert found["h100-su1-leaf-r0"]["window"] == 0
    assert found["h100-su1-leaf-r0"]["members"] == []  # before: its 32 members
    assert found["h100-su2-leaf-r0"]["window"] == 33
    assert len(found["h100-su2-leaf-r0"]["members"]) == 32


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sus=st.integers(1, 3),
    hosts=st.integers(2, 8),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.6),
    sizes=st.lists(st.integers(2, 70), min_size=2, max_size=4),
    per_host=st.sampled_from([None, None, 1, 2, 4]),
    nvlink=st.sampled_from([NVLinkRequirement.NONE, NVLinkRequirement.ANY]),
    affinity=st.booleans(),
    hops=st.sampled_from([None, None, 0, 1, 3]),
)
def test_the_diagnosis_answers_alike_without_the_refused_probes(
    gateway: Gateway,
    sus: int,
    hosts: int,
    seed: int,
    occupancy: float,
    sizes: list[int],
    per_host: int | None,
    nvlink: NVLinkRequirement,
    affinity: bool,
    hops: int | None,
) -> None:
    """Every reason and the largest count of a rail-aligned request's diagnosis, on worn and partly
    taken units, with explain.refused_by_leaves and without it (each such probe searched)."""

    async def scenario() -> None:
        await load_worn(gateway, units(sus, hosts, seed), random.Random(seed), occupancy)
        for gpus in sizes:
            req = PlacementRequest(
                gpus=gpus if per_host is None else max(1, gpus // per_host) * per_host,
                gpus_per_host=per_host,
                rail_aligned=True,
                nvlink=nvlink,
                gpu_nic_affinity=affinity,
                max_ib_hops=hops,
            )
            now = await PlacementEngine(gateway).place(req)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(explain, "refused_by_leaves", lambda *_: False)
                before = await PlacementEngine(gateway).place(req)
            assert bool(now.candidates) == bool(before.candidates), req
            assert _said(now.infeasible) == _said(before.infeasible), req

    asyncio.get_event_loop().run_until_complete(scenario())
