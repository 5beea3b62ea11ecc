"""`place`'s leaf page opens no window for a leaf whose GPUs cannot hold the request: a per-host
share on `need` hosts, an even split, or the GPUs at all (placement_leaves_fit: the per-GPU test of
a probe's $ready, for `place` too where the request's per-GPU bounds are the defaults, and only in
leaves whose hosts with no impaired GPU do not hold it alone). At 8k GPUs `248xH100 per-host=8
rail-aligned` read ~500 hosts' GPU maps, ~0.25-0.34 s, and `256xH100 rail-aligned` ~0.2-0.29 s,
for windows a degraded GPU per unit closed (issue #15; docs/benchmarks.md, "Stop 68"). Both
stores."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import Candidate
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest, parse_request
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load, load_worn
from tests.unit.test_probe_fullest_leaves import _fullest_unit_fits
from tests.unit.test_rail_probes import units


def _placed(candidates: list[Candidate]) -> list[list[str]]:
    return [sorted(g.uuid for g in c.gpus) for c in candidates]


def _ungated(req: PlacementRequest) -> PlacementRequest:
    """The same request with a temperature bound no GPU reaches: the same GPUs eligible, and a
    bound the leaf gate leaves to Python (`$filters.plain` false), so its page is what it was."""
    return req.with_(max_temperature_c=1000.0)


@pytest.mark.parametrize("text", ["248xH100 per-host=8 rail-aligned ib-hops<=1", "248xH100 rail-aligned ib-hops<=1"])
async def test_a_leaf_its_degraded_gpus_close_reads_no_host(gateway: Gateway, adopted: list[int], text: str) -> None:
    """Units 1-3 each have two hosts with a degraded GPU (29 hosts hold 8 healthy GPUs, 31 are
    needed, as 31 x 8 or as the only even split of 248 that 32 hosts can give); unit 4 holds it.
    `place` reads unit 4's hosts only (its window: 31 and two more), where without the gate it read
    every unit's window and Python refused three of them."""
    await load(gateway, _fullest_unit_fits())
    req = parse_request(text).validated()
    found = (await PlacementEngine(gateway).place(req, explain_infeasible=False)).candidates
    assert {g.host.split("-n")[0] for c in found for g in c.gpus} == {"h100-su4"}
    assert sum(adopted) <= 33, adopted
    adopted.clear()
    before = (await PlacementEngine(gateway).place(_ungated(req), explain_infeasible=False)).candidates
    assert sum(adopted) > 90, adopted  # every unit's window read
    assert _placed(found) == _placed(before)


@st.composite
def multi_host_requests(draw: st.DrawFn) -> PlacementRequest:
    per_host = draw(st.sampled_from([None, None, 1, 2, 4, 8]))
    return PlacementRequest(
        gpus=per_host * draw(st.integers(1, 8)) if per_host else draw(st.integers(2, 64)),
        gpus_per_host=per_host,
        rail_aligned=draw(st.booleans()),
        nvlink=draw(st.sampled_from([NVLinkRequirement.NONE, NVLinkRequirement.ANY])),
        max_ib_hops=draw(st.sampled_from([None, 1, 1, 3])),
        exclude_unhealthy=draw(st.booleans()),
        limit=draw(st.integers(1, 3)),
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sus=st.integers(1, 3),
    hosts=st.integers(2, 8),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.5),
    reqs=st.lists(multi_host_requests(), min_size=3, max_size=6),
)
def test_the_gate_finds_what_the_page_without_it_finds(
    gateway: Gateway, sus: int, hosts: int, seed: int, occupancy: float, reqs: list[PlacementRequest]
) -> None:
    """Whatever the units' wear (degraded, failed and hot GPUs, NICs down) and load: the same
    candidates, in the same order, as the page that tests no GPU."""

    async def scenario() -> None:
        await load_worn(gateway, units(sus, hosts, seed), random.Random(seed), occupancy)
        engine = PlacementEngine(gateway)
        for req in reqs:
            gated = (await engine.place(req, explain_infeasible=False)).candidates
            plain = (await engine.place(_ungated(req), explain_infeasible=False)).candidates
            assert _placed(gated) == _placed(plain), req

    asyncio.get_event_loop().run_until_complete(scenario())
