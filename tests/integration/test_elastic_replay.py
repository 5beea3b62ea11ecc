"""The elastic replay on both stores, on a small trace: it runs, the graph stays consistent,
and counts what it did (the policy comparison is benchmarks/elastic_replay.py)."""

from __future__ import annotations

from graphsvc.bench.elastic import TraceParams, make_trace, replay
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_elastic_resize import consistent

PARAMS = TraceParams(hours=8, gap_s=1200, urgent_every_s=2 * 3600, urgent_gpus=40, seed=3)


def test_trace_is_deterministic_and_has_every_kind_of_job() -> None:
    trace = make_trace(PARAMS)
    assert trace == make_trace(PARAMS)
    assert any(j.urgent for j in trace) and any(j.grow_at is not None for j in trace)


async def test_replay_runs_and_leaves_the_graph_consistent(gateway: Gateway) -> None:
    await load(gateway, "nvl72:racks=2")
    trace = make_trace(PARAMS)
    result = await replay(gateway, trace, "checkpoint")
    assert result.placed > 0 and result.urgent_placed > 0 and result.resizes > 0
    assert result.resizes_layout_kept <= result.resizes_done <= result.resizes
    # on the same state, the least-lost-work plan never loses more than the fewest-victims one
    assert result.paired_lost_checkpoint <= result.paired_lost_priority + 1e-6
    await consistent(gateway, 0.0)  # every reservation still active is whole
