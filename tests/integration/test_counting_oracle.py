"""The diagnosis's counting answer (graphsvc/placement/counting.py) against the search it stands
in for: on randomised small clusters with taken, degraded, failed and hot GPUs and NICs whose
port is down, whenever the counts answer, they answer what the engine's search finds (both
stores). The counts skip reading every host's GPUs; this is what makes that safe."""

from __future__ import annotations

import asyncio
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.placement.counting import Counts, free_bounds
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import PlacementRequest
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load_worn
from tests.integration.test_placement_random import FAMILIES, MODELS, small_cluster

countable_requests = st.builds(
    PlacementRequest,
    gpus=st.integers(1, 40),
    gpus_per_host=st.sampled_from([None, None, 1, 2, 4, 8]),
    max_ib_hops=st.sampled_from([None, None, 0, 1, 2]),
    max_temperature_c=st.sampled_from([None, None, 70.0]),
    exclude_unhealthy=st.booleans(),
    limit=st.just(1),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    family=st.sampled_from(FAMILIES),
    hosts=st.integers(1, 4),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.7),
    reqs=st.lists(countable_requests, min_size=4, max_size=8),
    with_model=st.booleans(),
)
def test_the_counts_answer_what_the_search_finds(
    gateway: Gateway,
    family: str,
    hosts: int,
    seed: int,
    occupancy: float,
    reqs: list[PlacementRequest],
    with_model: bool,
) -> None:
    async def scenario() -> None:
        await load_worn(gateway, small_cluster(family, hosts, seed), random.Random(seed), occupancy)
        engine = PlacementEngine(gateway)
        counts = Counts(engine, await free_bounds(engine, 1))
        for base in reqs:
            req = (
                base
                if base.gpus_per_host is None or base.gpus % base.gpus_per_host == 0
                else base.with_(gpus_per_host=None)
            )
            req = req.with_(model=MODELS[family] if with_model else None)
            counted = await counts.fits(req)
            assert counted is not None, f"{req}: a countable request on a plain cluster is counted"
            found = bool((await engine.place(req, explain_infeasible=False)).candidates)
            assert counted == found, f"{req} on {family} x{hosts}: counts say {counted}, the search {found}"

    asyncio.get_event_loop().run_until_complete(scenario())
