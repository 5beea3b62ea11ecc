"""What the store's counts say of a request nothing fits, for the diagnosis (#15).

FreeBounds: the free counters bound every search (each seeks its units by them), so a
request larger than they allow needs no search.

Counts: a request with no NVLink, hop or rail constraint fits exactly when some site's free
eligible GPUs cover it (fewest hosts, fullest first, never fails then), or its per-host share
on enough hosts, or one host holds it.

The search proves that by reading every host it might use (1,216 GPU rows for 1,000 GPUs);
the store counts it in one statement (query placement_wide_counts) that applies the same
per-GPU constraints (fragment placement_usable), the same model list and the same host set as
the search, so both answer alike. Anything the count cannot vouch for (a shape with NVLink,
hops or rails, a model the cached list lacks, more hosts than the search reads) answers None:
the caller searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.sites import locality

if TYPE_CHECKING:
    from graphsvc.placement.engine import PlacementEngine


@dataclass(frozen=True)
class HostGroup:
    """One row of placement_wide_counts: the hosts of one site (None: of no site) with the same
    free counter and the same largest per-host share they can give (`share_most`)."""

    site: str | None
    counter: int
    share_most: int
    hosts: int
    pool: int
    host_most: int
    doubt: int
    lapsed: int
    candidates: int


@dataclass(frozen=True)
class FreeBounds:
    """What the free counters allow (query placement_free_bounds): the most free GPUs on a host,
    in an NVLink domain, under a leaf; all free GPUs; hosts with a per-host share free."""

    host: int
    domain: int
    leaf: int
    total: int
    hosts_with_share: int
    share: int

    def most(self, req: PlacementRequest) -> int:
        """An upper bound on the GPUs any search can place for `req`'s shape, by the paths the
        engine tries (engine._Search.run): one NVLink domain, or one host, one leaf (one IB hop)
        and a pod or the cluster (3 hops or none), in the counts each seeks by."""
        if req.needs_one_domain:
            return max(self.domain, min(self.host, 1))  # one GPU has no pair: any host holds it
        most = self.host
        if req.max_ib_hops is None or req.max_ib_hops >= 1:
            most = max(most, self.leaf)
            if req.max_ib_hops is None or req.max_ib_hops >= 3:
                share = req.gpus_per_host
                wide = (
                    self.total
                    if share is None
                    else (share * self.hosts_with_share if share == self.share else self.total)
                )
                most = max(most, wide)
        return most


async def free_bounds(engine: PlacementEngine, share: int) -> FreeBounds:
    rows = await engine.gw.read("placement_free_bounds", {"share": share})
    row = rows[0] if rows else {}
    return FreeBounds(
        host=int(row.get("host") or 0),
        domain=int(row.get("domain") or 0),
        leaf=int(row.get("leaf") or 0),
        total=int(row.get("total") or 0),
        hosts_with_share=int(row.get("hosts") or 0),
        share=share,
    )


def countable(req: PlacementRequest) -> bool:
    """Shapes whose feasibility the counts decide: no NVLink wish (so any GPUs of a host do),
    no hop limit (so any hosts of a site do), no rail alignment."""
    return (
        req.nvlink is NVLinkRequirement.NONE
        and not req.same_nvlink_domain
        and req.max_ib_hops is None
        and not req.rail_aligned
    )


def fits(req: PlacementRequest, rows: Sequence[HostGroup], limit: int) -> bool | None:
    """Whether the engine's search would find a placement for `req` (countable), by the counts;
    None when the counts cannot say."""
    if not countable(req) or any(r.doubt or r.lapsed or r.candidates > limit for r in rows):
        return None  # a lapsed lease is free to the search but not to the counters it seeks by
    share = req.gpus_per_host or 1
    allowed = [r for r in rows if not locality.outside(r.site, req.site_set)]
    single = req.gpus_per_host in (None, req.gpus) and any(r.host_most >= req.gpus for r in allowed)
    if single or (req.gpus_per_host is not None and req.gpus_per_host >= req.gpus):
        return single
    # The wide search gives up when the counters cannot hold the request (every site together).
    if req.gpus_per_host is None:
        if sum(r.counter * r.hosts for r in rows) < req.gpus:
            return False
    elif sum(r.hosts for r in rows if r.counter >= share) < req.gpus // share:
        return False
    groups: dict[str | None, list[HostGroup]] = {}
    for r in allowed:
        groups.setdefault(None if req.cross_site else (r.site or ""), []).append(r)
    for members in groups.values():
        if req.gpus_per_host is None:
            if sum(r.pool for r in members) >= req.gpus:
                return True
        elif sum(r.hosts for r in members if r.share_most >= share) >= req.gpus // share:
            return True
    return False


class Counts:
    """The counts one diagnosis reads: once per set of per-GPU constraints (its relaxed and
    shrunk probes mostly share them; sizes and per-host shares do not change the counts)."""

    def __init__(self, engine: PlacementEngine) -> None:
        self.engine = engine
        self.read: dict[PlacementRequest, list[HostGroup]] = {}

    async def fits(self, req: PlacementRequest) -> bool | None:
        if not countable(req):
            return None
        key = req.with_(gpus=1, gpus_per_host=None, limit=1)  # the counts hold for every size and share
        if key not in self.read:
            self.read[key] = await read_counts(self.engine, req)
        return fits(req, self.read[key], self.engine.budget.units)


async def read_counts(engine: PlacementEngine, req: PlacementRequest) -> list[HostGroup]:
    """The counts for `req`'s per-GPU constraints, over the hosts the search reads."""
    from graphsvc.placement.engine import gpu_filters  # the engine imports this module's callers

    known = await engine.models()
    models = [
        m for m in known
        if (req.model_match is None or req.model_match.matches(m))
        and not (req.capabilities and req.capabilities.unmet(m) is not None)
    ]  # fmt: skip
    now = engine.clock()
    rows = await engine.gw.read(
        "placement_wide_counts",
        {
            "exclude": list(req.exclude_hosts),
            "filters": gpu_filters(req, rail_up=False),
            "known": known,
            "model": req.model_match.prefilter if req.model_match is not None else "",
            "models": models,
            "now": now,
            "stale_before": now - engine.stale_after_s if engine.stale_after_s is not None else 0.0,
        },
    )
    fields = ("counter", "share_most", "hosts", "pool", "host_most", "doubt", "lapsed", "candidates")
    return [HostGroup(site=r.get("site"), **{k: int(r.get(k) or 0) for k in fields}) for r in rows]
