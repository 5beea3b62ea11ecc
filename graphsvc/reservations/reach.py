"""Which hosts may join a live reservation without breaking its IB hop limit.

A grow, a phase's grow and a failed-GPU replacement choose from the free GPUs near the job
(`ElasticService.pool`). They judged layout only (rails, leaves, NVLink domains): a grow said
"the layout is kept" for a host with no IB path to the job, and `replaceFailed` moved a job
reserved under `ib-hops<=1` onto a host of another leaf island (a probe's cases). Here a host
the job does not hold yet joins it only within the stored request's hop limit of every host the
job holds, and of the other hosts added with it (placement.model.hops). The job's own hosts
always qualify, whatever the fabric says of them now (a re-import may have moved one). Without
a limit nothing is checked, as the placement engine checks nothing then. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from graphsvc.placement.model import Host, hops
from graphsvc.placement.request import RequestError, parse_request

Where = tuple[frozenset[str], frozenset[str], frozenset[str], str | None]


def hop_limit(request: str | None) -> int | None:
    """The IB hop limit of a reservation's stored request (its text form); None without one."""
    if not request:
        return None
    try:
        return parse_request(request).max_ib_hops
    except RequestError:
        return None


def _where(host: Host) -> Where:
    """What a host's hops to any other depend on: hosts of one leaf group share it."""
    return host.leaf_set, host.spines, host.cores, host.cluster


class Reach:
    """Decides, for one job and limit, which hosts may join it. Hops are judged once per pair of
    fabric positions (the hosts of a leaf group share one), not per pair of hosts: a job of 512
    hosts against a pool of 512 was ~1 s host by host (a review's measurement)."""

    def __init__(self, job: Sequence[Host], limit: int | None) -> None:
        self.limit = limit
        self.job = {h.name for h in job}
        self.job_where = {_where(h): h for h in job}
        self.met: dict[tuple[Where, Where], bool] = {}

    def _meet(self, a: Host, b: Host) -> bool:
        key = (_where(a), _where(b))
        found = self.met.get(key)
        if found is None:
            crossed = hops(a, b)  # two hosts, never one: the job's own are not judged
            found = self.met[key] = crossed is not None and self.limit is not None and crossed <= self.limit
        return found

    def joins(self, host: Host) -> bool:
        """One of the job's hosts, or within the limit of every one of them."""
        if self.limit is None or host.name in self.job:
            return True
        return all(self._meet(host, other) for other in self.job_where.values())

    def allowed(self, candidates: Iterable[Host]) -> set[str]:
        return {c.name for c in candidates if self.joins(c)}

    def together(self, added: Sequence[Host]) -> bool:
        """Hosts added at once also meet each other (two can each meet the job and not each other:
        one under each of a job host's two leaves). Job hosts are not judged again."""
        if self.limit is None:
            return True
        new = [h for h in added if h.name not in self.job]
        return all(self._meet(a, b) for i, a in enumerate(new) for b in new[i + 1 :])
