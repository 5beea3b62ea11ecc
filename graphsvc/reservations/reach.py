"""Which hosts may join a live reservation without breaking its IB hop limit.

A grow, a phase's grow and a failed-GPU replacement choose from the free GPUs near the job
(`ElasticService.pool`). They judged layout only (rails, leaves, NVLink domains): a grow said
"the layout is kept" for a host with no IB path to the job, and `replaceFailed` moved a job
reserved under `ib-hops<=1` onto a host of another leaf island (a probe's cases). Here the
stored request's hop limit holds for the grown set (placement.model.hops); without a limit, a
job whose hosts are all cabled stays on hosts some path joins. Pure functions over plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from graphsvc.placement.model import Host, hops
from graphsvc.placement.request import RequestError, parse_request


def hop_limit(request: str | None) -> int | None:
    """The IB hop limit of a reservation's stored request (its text form); None without one."""
    if not request:
        return None
    try:
        return parse_request(request).max_ib_hops
    except RequestError:
        return None


def meets(a: Host, b: Host, limit: int | None, *, joined: bool) -> bool:
    """Two hosts of one job: within `limit`, or (no limit) joined by some path when `joined`."""
    if a.name == b.name:
        return True
    crossed = hops(a, b)
    if limit is not None:
        return crossed is not None and crossed <= limit
    return crossed is not None or not joined


def reachable(job: Sequence[Host], candidates: Iterable[Host], limit: int | None) -> set[str]:
    """The candidate hosts that meet every host of the job. `joined`: every job host is cabled
    (a cluster without a fabric import has no known path anywhere, and keeps growing as before)."""
    joined = all(h.leaves for h in job)
    return {c.name for c in candidates if all(meets(c, j, limit, joined=joined) for j in job)}


def all_meet(job: Sequence[Host], hosts: Sequence[Host], limit: int | None) -> bool:
    """Whether the job's hosts and the added ones meet each other pairwise (two added hosts can
    each meet the job and not each other: one under each of a job host's two leaves)."""
    joined = all(h.leaves for h in job)
    every = {h.name: h for h in [*job, *hosts]}
    names = sorted(every)
    return all(meets(every[a], every[b], limit, joined=joined) for i, a in enumerate(names) for b in names[i + 1 :])
