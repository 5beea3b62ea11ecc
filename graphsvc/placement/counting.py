"""What the store's counts say of a request nothing fits, for the diagnosis (#15).

FreeBounds: the free counters bound every search (each seeks its units by them), so a
request larger than they allow needs no search.

Counts: a request with no NVLink or rail constraint fits exactly when one host holds it, or,
without a hop limit, some site's free eligible GPUs cover it (fewest hosts, fullest first,
never fails then) or enough of its hosts hold the per-host share, or, within one or two hops,
the hosts under one leaf do.

The search proves that by reading every host it might use (1,216 GPU rows for 1,000 GPUs);
the store counts it (queries placement_wide_counts and placement_leaf_counts) with the same
per-GPU constraints (fragment placement_usable), the same model list and the same hosts as the
search, so both answer alike (tests/integration/test_counting_oracle.py). Anything the counts
cannot vouch for (NVLink, rails or a pod's hops asked, a model newer than the cached list, a
lapsed lease, as many hosts and leaves as the search may read, a leaf across sites) answers
None: the caller searches.

Each count reads only what its probe can use: a probe with no share or hop limit is first
proven on the fullest hosts alone (placement_fullest_pool), a per-host share counts the hosts
whose counters hold it, a one-leaf probe the leaves whose counters hold it (at 8k GPUs a full
count scans ~4,200 free GPUs, 35 ms of FalkorDB time; these scan a few hundred to ~2,500).
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
    cluster: str | None = None


@dataclass(frozen=True)
class LeafGroup:
    """One row of placement_leaf_counts: the hosts under one rail-0 leaf, of one cluster (and its
    site), with the same largest per-host share they can give."""

    leaf: str
    leaf_counter: int
    cluster: str | None
    share_most: int
    hosts: int
    pool: int
    doubt: int
    lapsed: int
    site: str | None = None


@dataclass(frozen=True)
class PoolGroup:
    """One row of placement_fullest_pool: eligible free GPUs counted in one cluster, on the
    fullest hosts only; with every candidate host's count and free counters summed."""

    site: str | None
    cluster: str | None
    pool: int
    candidates: int
    counters: int


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
    hosts_with_free: int = 0
    leaves_with_free: int = 0
    # Every NIC is cabled to a leaf (none to a spine or core, which keep no counter): a rail-aligned
    # set's hosts then all reach the leaf of a rail they share, and that leaf's counter bounds it.
    rails_under_leaves: bool = False

    def more_than_searched(self, units: int) -> bool:
        """Whether a search might spend its budget of `units` before it reads every unit a count
        would count: the host and leaf searches that come before the wide read count every host
        and leaf they scan, and stop once they reach the budget (engine._Search.enough)."""
        return self.hosts_with_free + self.leaves_with_free >= units

    def most(self, req: PlacementRequest) -> int:
        """An upper bound on the GPUs any search can place for `req`'s shape, by the paths the
        engine tries (engine._Search.run): one NVLink domain, or one host, one leaf (one IB hop)
        and a pod or the cluster (3 hops or none), in the counts each seeks by."""
        if req.needs_one_domain:
            return max(self.domain, min(self.host, 1))  # one GPU has no pair: any host holds it
        most = self.host
        if req.max_ib_hops is None or req.max_ib_hops >= 1:
            most = max(most, self.leaf)
            # A rail-aligned set's hosts all reach the leaf of a rail they share: where every NIC
            # is cabled to a leaf, the most a leaf counter holds bounds it, not every free GPU.
            by_leaf = req.rail_aligned and self.rails_under_leaves
            if (req.max_ib_hops is None or req.max_ib_hops >= 3) and not by_leaf:
                share = req.gpus_per_host  # the bounds were read for one share; any other: every free GPU
                most = max(most, share * self.hosts_with_share if share == self.share else self.total)
        return most


async def free_bounds(engine: PlacementEngine, share: int, *, rails_under_leaves: bool = False) -> FreeBounds:
    """`rails_under_leaves`: the caller read that no NIC is cabled off a leaf (FreeBounds)."""
    rows = await engine.gw.read("placement_free_bounds", {"share": share})
    row = rows[0] if rows else {}
    return FreeBounds(
        host=int(row.get("host") or 0),
        domain=int(row.get("domain") or 0),
        leaf=int(row.get("leaf") or 0),
        total=int(row.get("total") or 0),
        hosts_with_share=int(row.get("hosts") or 0),
        share=share,
        hosts_with_free=int(row.get("free_hosts") or 0),
        leaves_with_free=int(row.get("free_leaves") or 0),
        rails_under_leaves=rails_under_leaves,
    )


def countable(req: PlacementRequest) -> bool:
    """Shapes whose feasibility the counts decide: no NVLink wish (so any GPUs of a host do), no
    rail alignment, and no hop limit (any hosts of a site do), one host (0 hops), or one leaf
    (1-2 hops: hosts cabled to one leaf are one hop apart). Pods (3-4 hops) are searched."""
    return (
        req.nvlink is NVLinkRequirement.NONE
        and not req.same_nvlink_domain
        and not req.rail_aligned
        and (req.max_ib_hops is None or req.max_ib_hops < 3)
    )


def _unvouched(rows: Sequence[HostGroup | LeafGroup], limit: int) -> bool:
    """Counts that may differ from what the search finds: a GPU of a model newer than the cached
    list, a lapsed lease (free to the search, not yet to the counters it seeks by), more hosts
    than the search reads."""
    return any(r.doubt or r.lapsed or (isinstance(r, HostGroup) and r.candidates > limit) for r in rows)


def _allowed(req: PlacementRequest, rows: Sequence[HostGroup]) -> list[HostGroup]:
    return [r for r in rows if not locality.outside(r.site, req.site_set)]


def _wide_group(req: PlacementRequest, row: HostGroup | PoolGroup) -> tuple[str, str] | None:
    """The group the wide search chooses within (locality.site_key): one cluster of one site, or
    every site for a cross-site request."""
    return None if req.cross_site else (row.site or "", row.cluster or "")


def _one_host_only(req: PlacementRequest) -> bool:
    """No hop between hosts, or a per-host share of the whole request: only the one-host search runs."""
    return (req.max_ib_hops is not None and req.max_ib_hops < 1) or (
        req.gpus_per_host is not None and req.gpus_per_host >= req.gpus
    )


def _single(req: PlacementRequest, rows: Sequence[HostGroup]) -> bool:
    """The single-host search: a host whose counter and eligible GPUs (NICs aside) hold it all."""
    return req.gpus_per_host in (None, req.gpus) and any(r.host_most >= req.gpus for r in _allowed(req, rows))


def fits(req: PlacementRequest, rows: Sequence[HostGroup], limit: int) -> bool | None:
    """Whether the engine's search would find a placement for `req` (countable), by the counts;
    None when the counts cannot say."""
    if not countable(req) or req.max_ib_hops is not None:
        return None
    if _unvouched(rows, limit):
        return None
    share = req.gpus_per_host or 1
    single = _single(req, rows)
    if single or (req.gpus_per_host is not None and req.gpus_per_host >= req.gpus):
        return single
    # The wide search gives up when the counters cannot hold the request (every site together).
    if req.gpus_per_host is None:
        if sum(r.counter * r.hosts for r in rows) < req.gpus:
            return False
    elif sum(r.hosts for r in rows if r.counter >= share) < req.gpus // share:
        return False
    groups: dict[tuple[str, str] | None, list[HostGroup]] = {}
    for r in _allowed(req, rows):
        groups.setdefault(_wide_group(req, r), []).append(r)
    return any(_covers(req, members) for members in groups.values())


def _covers(req: PlacementRequest, members: Sequence[HostGroup | LeafGroup]) -> bool:
    """One group's hosts hold the request: their eligible GPUs cover it (fewest hosts, fullest
    first), or enough of them give its per-host share."""
    if req.gpus_per_host is None:
        return sum(g.pool for g in members) >= req.gpus
    share = req.gpus_per_host
    return sum(g.hosts for g in members if g.share_most >= share) >= req.gpus // share


def surely_fits(req: PlacementRequest, rows: Sequence[PoolGroup], limit: int) -> bool:
    """Whether the GPUs placement_fullest_pool counted prove that the search finds `req` (no
    NVLink, rails, hops or per-host share): the counters hold it and one cluster's counted GPUs
    cover it, as `fits` decides with the full counts. False: not proven (the full counts say)."""
    if not rows or rows[0].candidates > limit or rows[0].counters < req.gpus:
        return False
    by_group: dict[tuple[str, str] | None, int] = {}
    for r in rows:
        if not locality.outside(r.site, req.site_set):
            group = _wide_group(req, r)
            by_group[group] = by_group.get(group, 0) + r.pool
    return any(pool >= req.gpus for pool in by_group.values())


def fits_under_a_leaf(
    req: PlacementRequest, rows: Sequence[HostGroup], leaves: Sequence[LeafGroup], limit: int, hosts: int
) -> bool | None:
    """Whether the search finds `req` (countable, 0-2 IB hops) on one host (`rows`: the hosts
    whose counters could hold it all) or under one leaf (placement_leaves_fit: a leaf whose
    counter holds the request, its hosts' eligible GPUs covering it or enough of them holding the
    per-host share); None when the counts cannot say. `hosts`: how many hold a free GPU."""
    if not countable(req) or req.max_ib_hops is None:
        return None
    if _unvouched([*rows, *leaves], limit):
        return None
    if len({g.leaf for g in leaves}) + hosts >= limit:
        return None  # more units than the search reads (it stops on reaching its budget)
    if _single(req, rows):
        return True
    if _one_host_only(req):
        return False
    by_leaf: dict[str, list[LeafGroup]] = {}
    for g in leaves:
        by_leaf.setdefault(g.leaf, []).append(g)
    for members in by_leaf.values():
        if members[0].leaf_counter < req.gpus:
            continue
        sites = {g.site for g in members}
        if len(sites) > 1 and not req.cross_site:
            return None  # a leaf across sites: the search may refuse what the count would take
        if any(locality.outside(site, req.site_set) for site in sites):
            if len(sites) > 1:
                return None
            continue
        if _covers(req, members):
            return True
    return False


class Counts:
    """The counts one diagnosis reads: per set of per-GPU constraints (its relaxed and shrunk
    probes mostly share them), each read once for the range of counters it covers.
    A probe with no per-host share or hop limit is first proven on the fullest hosts
    (placement_fullest_pool: it usually fits, and proving so scans a fraction of the GPUs);
    a per-host share counts only the hosts whose counters hold it, a one-leaf probe only the
    leaves whose counters hold it."""

    def __init__(self, engine: PlacementEngine, bounds: FreeBounds) -> None:
        self.engine = engine
        self.bounds = bounds
        self.wide: dict[PlacementRequest, tuple[int, list[HostGroup]]] = {}  # by the least counter read
        self.leaves: dict[PlacementRequest, list[tuple[int, int, list[LeafGroup]]]] = {}  # by least counters
        self.proven: dict[PlacementRequest, int] = {}  # the most GPUs placement_fullest_pool proved (0: none)

    async def fits(self, req: PlacementRequest) -> bool | None:
        if not countable(req) or self.bounds.more_than_searched(self.engine.budget.units):
            return None  # more units than the search reads: the counts would not say what it finds
        key = req.with_(gpus=1, gpus_per_host=None, max_ib_hops=None, limit=1)  # the same for every size
        limit = self.engine.budget.units
        if req.max_ib_hops is None:
            if req.gpus_per_host is None and not self._counted_in_full(key) and await self._proven(req, key):
                return True
            return fits(req, await self._wide(req, key, least=req.gpus_per_host or 1), limit)
        # One host: only hosts whose counters hold it all; one leaf: only leaves whose counters
        # hold it and hosts whose counters hold the share (what placement_leaves_fit seeks).
        single = req.gpus_per_host in (None, req.gpus) and req.gpus <= self.bounds.host
        rows = await self._wide(req, key, least=req.gpus) if single else []
        leaves = [] if _one_host_only(req) or _single(req, rows) else await self._leaves(req, key)
        return fits_under_a_leaf(req, rows, leaves, limit, self.bounds.hosts_with_free)

    def _counted_in_full(self, key: PlacementRequest) -> bool:
        """Whether the wide counts of every host (least counter 1) are read already: they answer."""
        cached = self.wide.get(key)
        return cached is not None and cached[0] <= 1

    async def _leaves(self, req: PlacementRequest, key: PlacementRequest) -> list[LeafGroup]:
        """The leaf counts for `req`: a read for smaller leaf counters and shares serves. Read
        for counters a sixteenth below the probe: the probes that follow step down a few GPUs
        (the fullest leaf's degraded or hot GPUs), and one read of a few leaves serves them."""
        least = req.gpus_per_host or 1
        for leaf_least, host_least, rows in self.leaves.get(key, []):
            if leaf_least <= req.gpus and host_least <= least:
                return rows
        leaf_least = req.gpus - req.gpus // 16
        rows = await read_leaf_counts(self.engine, req, least_leaf=leaf_least, least=least)
        self.leaves.setdefault(key, []).append((leaf_least, least, rows))
        return rows

    async def _proven(self, req: PlacementRequest, key: PlacementRequest) -> bool:
        """Whether the fullest hosts' eligible GPUs prove `req` fits. Read once per diagnosis: a
        smaller probe than the one proven is proven too; any other is counted in full (the first
        proof failing, the hosts are fuller of refused GPUs than the margin allows)."""
        if key not in self.proven:
            rows = await read_pool(self.engine, req)
            self.proven[key] = req.gpus if surely_fits(req, rows, self.engine.budget.units) else 0
            return bool(self.proven[key])
        return req.gpus <= self.proven[key]

    async def _wide(self, req: PlacementRequest, key: PlacementRequest, least: int) -> list[HostGroup]:
        """The wide counts over the hosts whose counters hold `least`; a read for fewer serves."""
        cached = self.wide.get(key)
        if cached is None or cached[0] > least:
            cached = self.wide[key] = (least, await read_counts(self.engine, req, least))
        return cached[1]


async def _count_params(engine: PlacementEngine, req: PlacementRequest) -> dict[str, object]:
    """What both count statements take: `req`'s per-GPU constraints and the exact models it accepts."""
    from graphsvc.placement.engine import gpu_filters  # the engine imports this module's callers

    known = await engine.models()
    models = [
        m for m in known
        if (req.model_match is None or req.model_match.matches(m))
        and not (req.capabilities and req.capabilities.unmet(m) is not None)
    ]  # fmt: skip
    now = engine.clock()
    return {
        "exclude": list(req.exclude_hosts),
        "filters": gpu_filters(req, rail_up=False),
        "known": known,
        "model": req.model_match.prefilter if req.model_match is not None else "",
        "models": models,
        "now": now,
        "stale_before": now - engine.stale_after_s if engine.stale_after_s is not None else 0.0,
    }


async def read_counts(engine: PlacementEngine, req: PlacementRequest, least: int = 1) -> list[HostGroup]:
    """The counts for `req`'s per-GPU constraints, over the hosts the search reads whose free
    counter is at least `least`."""
    rows = await engine.gw.read("placement_wide_counts", {**await _count_params(engine, req), "least": least})
    fields = ("counter", "share_most", "hosts", "pool", "host_most", "doubt", "lapsed", "candidates")
    return [
        HostGroup(site=r.get("site"), cluster=r.get("cluster"), **{k: int(r.get(k) or 0) for k in fields}) for r in rows
    ]


async def read_pool(engine: PlacementEngine, req: PlacementRequest) -> list[PoolGroup]:
    """`req`'s eligible free GPUs on the fullest hosts whose counters cover it and a quarter
    more (degraded or hot GPUs count as free by the counters), per cluster."""
    params = await _count_params(engine, req)
    del params["known"]
    rows = await engine.gw.read("placement_fullest_pool", {**params, "cover": req.gpus + req.gpus // 4})
    fields = ("pool", "candidates", "counters")
    return [
        PoolGroup(site=r.get("site"), cluster=r.get("cluster"), **{k: int(r.get(k) or 0) for k in fields}) for r in rows
    ]


async def read_leaf_counts(
    engine: PlacementEngine, req: PlacementRequest, *, least_leaf: int = 1, least: int = 1
) -> list[LeafGroup]:
    """The counts under each rail-0 leaf whose free counter is at least `least_leaf`, of its hosts
    whose counter is at least `least`, for `req`'s per-GPU constraints."""
    params = {**await _count_params(engine, req), "least_leaf": least_leaf, "least": least}
    rows = await engine.gw.read("placement_leaf_counts", params)
    fields = ("leaf_counter", "share_most", "hosts", "pool", "doubt", "lapsed")
    return [
        LeafGroup(
            leaf=str(r["leaf"]), cluster=r.get("cluster"), site=r.get("site"), **{k: int(r.get(k) or 0) for k in fields}
        )
        for r in rows
    ]


@dataclass(frozen=True)
class LeafShares:
    """placement_leaf_shares' rows: per leaf whose free counter is at least `least_leaf`, its
    counter and how many of its hosts' counters hold each share (held[d - 1]: at least d free)."""

    least_leaf: int
    rows: tuple[tuple[int, tuple[int, ...]], ...]

    def holds(self, n: int, share: int) -> bool:
        """What placement_leaf_holds answers for `n` GPUs, `share` on each host (0: any share
        that divides n), for n at least `least_leaf` (a leaf below it holds no n)."""
        for counter, held in self.rows:
            if counter < n:
                continue
            shares = range(1, len(held) + 1) if share == 0 else (share,)
            if any(n % d == 0 and d <= len(held) and d * held[d - 1] >= n for d in shares):
                return True
        return False

    def most_hosts(self, share: int) -> int:
        """The most hosts k for which some leaf holds k x `share` by placement_leaf_holds (its
        counter at least k x share, k of its hosts holding the share), among counts of at least
        `least_leaf` GPUs; 0 where none. k x share fits only where k is at most this."""
        return max(
            (min(counter // share, held[share - 1]) for counter, held in self.rows if share <= len(held)),
            default=0,
        )


@dataclass(frozen=True)
class LeafNics:
    """placement_leaf_nics' rows: per leaf whose free counter is at least `least_leaf`, its counter
    and how many NICs are cabled to it (at least its hosts)."""

    least_leaf: int
    rows: tuple[tuple[int, int], ...]

    def most_hosts(self, share: int) -> int:
        """At least LeafShares.most_hosts(share) read for the same leaves: a leaf's hosts holding
        the share are at most its NICs (held[share - 1] <= nics), so min(counter // share, nics)
        bounds each leaf's term there."""
        return max((min(counter // share, nics) for counter, nics in self.rows), default=0)


class LeafShareBound:
    """How many hosts a rail-aligned share may take by the leaf counters, for one diagnosis:
    placement_leaf_nics first (a leaf's NICs bound its hosts; it reads no host), then, only where
    that bound lets `least` hosts through, placement_leaf_shares; each read once (again only for
    smaller counts than it was read for)."""

    def __init__(self, engine: PlacementEngine) -> None:
        self.engine = engine
        self.read: LeafShares | None = None
        self.nics: LeafNics | None = None

    async def most_hosts(self, share: int, least_leaf: int, least: int = 0) -> int:
        """LeafShares.most_hosts over the leaves whose counter is at least `least_leaf`, where it
        is `least` or more; where it is less, a number below `least` (the caller needs `least`
        hosts or more: any such number answers it alike). The shares of `251xH100 rail-aligned`
        at 8k GPUs need 50 or more hosts of 32-host units: the NICs say so, and
        placement_leaf_shares (every leaf's hosts, 12-14 ms of the store's time) is not read."""
        if self.nics is None or self.nics.least_leaf > least_leaf:
            self.nics = await read_leaf_nics(self.engine, least_leaf)
        bound = self.nics.most_hosts(share)
        if bound < least:
            return bound
        if self.read is None or self.read.least_leaf > least_leaf:
            self.read = await read_leaf_shares(self.engine, least_leaf)
        return self.read.most_hosts(share)


async def read_leaf_nics(engine: PlacementEngine, least_leaf: int) -> LeafNics:
    rows = await engine.gw.read("placement_leaf_nics", {"least_leaf": least_leaf})
    return LeafNics(least_leaf=least_leaf, rows=tuple((int(r["leaf_counter"]), int(r["nics"])) for r in rows))


async def read_leaf_shares(engine: PlacementEngine, least_leaf: int) -> LeafShares:
    rows = await engine.gw.read("placement_leaf_shares", {"least_leaf": least_leaf})
    return LeafShares(
        least_leaf=least_leaf,
        rows=tuple((int(r["leaf_counter"]), tuple(int(c) for c in r["held"] or ())) for r in rows),
    )
