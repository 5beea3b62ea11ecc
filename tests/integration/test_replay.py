"""The trace replay is deterministic for a seed, and drives reservations through the service."""

from __future__ import annotations

import pytest

from graphsvc.bench.replay import Replay, llm_jobs, snapshot
from graphsvc.bench.run import driver_for

pytestmark = pytest.mark.slow


async def test_replay_is_deterministic_and_releases_everything() -> None:
    results = []
    for _ in range(2):
        async with driver_for("superpod-h100:sus=1", None) as (client, driver):
            topology, models = await snapshot(client)
            jobs = llm_jobs(25, seed=3, max_gpus=64)
            replay = Replay(driver, topology, models)
            runs = [await replay.run(policy, jobs) for policy in ("service", "lookahead", "slurm-tree")]
            live = await client.post("/graphql", json={"query": '{ reservations(filter: {state: "active"}) { id } }'})
            assert live.json()["data"]["reservations"] == []  # every job released at its end
            results.append([[(j.job, j.wait_s, j.bottleneck_gbps, j.hops) for j in r.jobs] for r in runs])
    assert results[0] == results[1]
    assert all(len(r) == 25 for r in results[0])
