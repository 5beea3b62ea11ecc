"""Lookahead: of the service's ranked candidates, take the one that costs the next jobs least.

The service ranks candidates for one request; a scheduler also knows its queue. For each
candidate the replay's `lookahead` policy asks what taking it does to

1. the queue's next jobs (the jobs waiting behind this one, then the next arrivals, up to
   UPCOMING): for each, whether it still fits at all and the best bandwidth it could still
   get (`metrics.best_bandwidth`), weighted by its size (a lost place for a 256-GPU job
   costs more than for a 2-GPU job);
2. the largest free NVLink domain (or host) left.

It takes the candidate with the smallest cost to the next jobs, then the largest free
domain left, then the service's own rank. Pure: a `Topology` and lists of GPU uuids in.
"""

from __future__ import annotations

from collections import defaultdict

from graphsvc.bench.metrics import best_bandwidth
from graphsvc.bench.policies import Topology

UPCOMING = 8  # how many of the next jobs a choice is judged against


def largest_free_domain(t: Topology) -> int:
    per: dict[str, int] = defaultdict(int)
    for u in t.free:
        per[t.domain_of[u] or t.host_of[u]] += 1
    return max(per.values(), default=0)


def cost_to_next(t: Topology, models: dict[str, str], upcoming: list[int], before: dict[int, float | None]) -> float:
    """GPU-weighted loss for the next jobs: 1 per GPU of a job that no longer fits, the lost
    bandwidth share per GPU of a job that fits less well."""
    lost = 0.0
    for n in upcoming:
        was = before[n]
        if was is None:
            continue  # it did not fit (or needs no link) before either
        now = best_bandwidth(t, models, n) if len(t.free) >= n else None
        if now is None:
            lost += n
        elif now < was:
            lost += n * (1 - now / was)
    return lost


def pick(t: Topology, models: dict[str, str], options: list[list[str]], upcoming: list[int]) -> int:
    """Index into `options` (the service's ranked candidates) of the one to take."""
    if len(options) == 1:
        return 0
    before = {n: best_bandwidth(t, models, n) for n in set(upcoming)}
    saved = t.free
    scored = []
    try:
        for k, gpus in enumerate(options):
            t.free = saved - set(gpus)
            scored.append((cost_to_next(t, models, upcoming, before), -largest_free_domain(t), k))
    finally:
        t.free = saved
    return min(scored)[2]
