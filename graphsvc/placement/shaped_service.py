"""The shaped-job search against the graph: read the candidate hosts once, then place in Python.

A shaped job is large (tens to thousands of GPUs) and its TP groups may use any host with a
free GPU of the model, so the search reads every such host once (one index-backed read of
names, one read of their GPUs and NVLink edges) and leaves group carving, tiers and the rank
map to graphsvc.placement.shaped, a pure function.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from graphsvc.placement.engine import HostLoader, unknown_model
from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.shape import JobShape, ShapedPlacement
from graphsvc.placement.shaped import place_shape
from graphsvc.store.gateway import Gateway

MAX_CANDIDATE_HOSTS = 20_000


@dataclass
class ShapedResult:
    placement: ShapedPlacement | None
    infeasible: list[InfeasibleReason] = field(default_factory=list)
    hosts_read: int = 0
    elapsed_ms: float = 0.0


async def place_shaped(
    gw: Gateway,
    shape: JobShape,
    *,
    clock: Callable[[], float] = time.time,
    stale_after_s: float | None = None,
) -> ShapedResult:
    started = time.perf_counter()
    shape = shape.validated()
    req = shape.gpu_request()
    unknown = await unknown_model(gw, req)
    if unknown:
        return ShapedResult(None, unknown)
    prefilter = req.model_match.prefilter if req.model_match is not None else ""
    rows = await gw.read(
        "shaped_candidate_hosts",
        {"model": prefilter, "exclude": list(shape.exclude_hosts), "limit": MAX_CANDIDATE_HOSTS},
    )
    now = clock()
    stale_before = now - stale_after_s if stale_after_s is not None else None
    hosts = await HostLoader(gw, now, stale_before=stale_before).load(str(r["host"]) for r in rows)
    answer = place_shape(shape, hosts)
    elapsed = (time.perf_counter() - started) * 1000
    if isinstance(answer, ShapedPlacement):
        return ShapedResult(answer, [], len(hosts), elapsed)
    return ShapedResult(None, answer, len(hosts), elapsed)
