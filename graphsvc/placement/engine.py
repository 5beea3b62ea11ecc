"""The placement search: Cypher reads candidate units in best-fit order, Python judges them.

Units are read through the free-GPU counters (hosts, NVLink domains, leaf switches) with
index seeks on exact counts, smallest sufficient count first, so the work grows with the
candidates read, not with the cluster. Each unit's GPUs are then checked against every
hard constraint, and valid candidates are scored: best fit against fragmentation first,
then bottleneck bandwidth, then health and temperature; soft preferences order ties.
The search pages on until it has enough candidates or has read every unit that could fit
(or its budget), so a small cluster is searched exhaustively.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import cast

from graphsvc.placement import rails, score
from graphsvc.placement.explain import describe, diagnose
from graphsvc.placement.graph_facts import GraphFacts
from graphsvc.placement.mig_service import place_slices
from graphsvc.placement.model import (
    LIVE_LEASE,
    BlockRow,
    Candidate,
    FitRow,
    FitUnit,
    Gpu,
    GpuRow,
    Host,
    HostMap,
    InfeasibleReason,
    PlacementResult,
    TopologyRow,
    hop_groups,
    hops,
    leaf_units,
)
from graphsvc.placement.request import NVLinkRequirement, Packing, PlacementRequest, RequestError
from graphsvc.placement.select import (
    BUSY_MEMORY_MIB,
    BUSY_UTILIZATION_PCT,
    bottleneck,
    choose_in_host,
    eligible,
    rail_up,
    rank_order,
)
from graphsvc.placement.statement import Statement
from graphsvc.placement.topology_cache import KeptHost, TopologyCache
from graphsvc.sites import locality
from graphsvc.sites.store import host_sites
from graphsvc.store.backend import Row
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import SCAN_SUFFIX
from graphsvc.store.schema import TIE_BUCKETS, tie_bucket

TakeUnits = Callable[[list[FitUnit]], Awaitable[None]]

MAX_HOST_GPUS = 128
MAX_DOMAIN_GPUS = 576
BLOCKS_QUERY = "placement_cluster_blocks"
BLOCKS_BESIDE = frozenset({"placement_leaves_fit"})
"""Candidate statements without the cluster's free blocks: BLOCKS_QUERY reads them beside the first page."""
LEAF_EXTRA_HOSTS = 2  # hosts read beyond those that cover a multi-host request, for the best fit
# Free blocks read per model besides the request's own, by the first candidate statement of a
# request naming no model on a cluster of several (search_each_model): each model's search adds
# the units of its first page (its `want` plus the page's slack), and ranking reads the largest
# `len(found) + 2` blocks (finish); read with the first statement, they cost no statement more.
EACH_MODEL_BLOCKS = 5
# The most leaves a probe's part of a leaf page reads (_Search._fit_pages, `parts_grow`): each leaf
# costs the store its hosts' GPU tests ($ready: ~2 ms for 32 hosts x 8 GPUs at 8k GPUs), a statement
# about 1 ms more; parts doubling to 16 read up to 15 leaves past the one that fits (the 248 probe of
# `251xH100 rail-aligned`'s diagnosis at 8k GPUs: 27 leaves tested, 5 statements), parts of 4 at most
# 3 (19 leaves, 6 statements).
PROBE_PART_MOST = 4
# Units a candidate statement's first page reads beyond the candidates wanted (_Search._fit_pages).
PAGE_SLACK = 2
NO_LIMIT = 1e9  # a temperature or utilisation bound that bounds nothing (Cypher has no infinity literal)
# Hosts up to which the candidate statements read the cluster's largest free blocks by a scan of
# every host and NVLink domain (their `_scan` forms, placement_free_blocks_scan) instead of index
# seeks per free count and tie bucket, whose stale entries grow while a scheduler reserves
# (docs/benchmarks.md, "Stop 42"). The same bound as the one-host reserves' scan.
SCAN_BLOCKS_UP_TO = 512


@dataclass
class SearchBudget:
    units: int = 4000  # units (hosts, domains, leaves) read before giving up
    page: int = 256  # the largest page of units read at once


class BlockTops:
    """Where the free-blocks fragment (placement_free_blocks) starts probing free counts down:
    the largest free host and NVLink domain any read has seen so far (never lowered), the
    largest possible units before the first read. A hint only: the fragment also seeks the
    counts above it, so a larger unit is still found (and raises the hint); a hint at the
    largest possible unit made every candidate statement probe 128 host and 576 domain counts
    (~2 ms at 100k GPUs), one below the real largest makes it read every unit above it."""

    def __init__(self) -> None:
        self.host: int | None = None
        self.domain: int | None = None

    def params(self) -> dict[str, int]:
        return {
            "host_top": MAX_HOST_GPUS if self.host is None else self.host,
            "domain_top": MAX_DOMAIN_GPUS if self.domain is None else self.domain,
        }

    def saw(self, host_blocks: list[BlockRow], domain_blocks: list[BlockRow]) -> None:
        self.host = max(self.host or 0, _largest(host_blocks))
        self.domain = max(self.domain or 0, _largest(domain_blocks))


def _largest(blocks: list[BlockRow]) -> int:
    return max((int(b["free"] or 0) for b in blocks if b), default=0)


def prefilter_params(prefilter: str, known: list[str]) -> dict[str, object]:
    """$prefilter_models and $known of the candidate statements' model prefilter: a unit whose
    model is one of `known` (the engine's model list, graph_facts: at most a minute old) passes when the
    name contains `prefilter` (decided here, once), any other by the store's own substring test
    (`toLower(...) CONTAINS $model`, as before). At 100k GPUs that test on each of the 3,300
    domains with exactly 4 free cost ~3 ms of a 4-GPU request; list membership ~0.1 ms. Only
    ASCII names are decided here, where Python's and Cypher's lower case agree; '' stands for a
    unit with no model, which a named model never matches."""
    if not prefilter:
        return {"prefilter_models": [], "known": [""]}  # `$model = ''` passes every unit first
    plain = [m for m in known if m.isascii()]
    return {"prefilter_models": [m for m in plain if prefilter in m.lower()], "known": [*plain, ""]}


class HostLoader:
    """Reads hosts' GPUs and NVLink edges once per request (the graph does not change under us).

    A GPU whose reservation lease has lapsed counts as free, even before the lease job ran.
    """

    def __init__(
        self,
        gateway: Gateway,
        now: float,
        virtual_free: frozenset[str] = frozenset(),
        stale_before: float | None = None,
        sites: frozenset[str] = frozenset(),
    ) -> None:
        self.gw = gateway
        self.sites = sites  # only these sites' GPUs are offered (empty: every site)
        self.now = now
        self.virtual_free = virtual_free  # GPUs a preemption plan may take
        self.stale_before = stale_before  # hosts not heard from since then are not offered
        self.cache: dict[str, Host] = {}
        self.by_free: dict[tuple[tuple[str, ...], str, int], tuple[int, list[Row]]] = {}  # by least share read
        self.leaf_held: dict[tuple[int, int], bool] = {}  # leaf_holds, by the count and share asked
        self.nics_off_leaf: bool | None = None  # placement_nics_off_leaf, once read

    async def load(self, names: Iterable[str]) -> list[Host]:
        wanted = list(dict.fromkeys(names))
        missing = [n for n in wanted if n not in self.cache]
        if missing:
            rows = cast(list[GpuRow], await self.gw.read("placement_host_gpus", {"hosts": missing}))
            links = await self.gw.read("placement_host_nvlinks", {"hosts": missing})
            by_uuid: dict[str, Gpu] = {}
            for row in rows:
                host = self.cache.get(row["host"])
                if host is None:
                    host = self.cache[row["host"]] = _host(row["host"], row)
                gpu = Gpu.from_row(host.name, row)
                self._settle(host, gpu, row.get("lease_expires_at"))
                host.gpus.append(gpu)
                by_uuid[gpu.uuid] = gpu
            for name in missing:
                if name in self.cache:
                    self.cache[name].gpus.sort(key=lambda g: g.index)
            # The switches above each host's leaves, one row per host: on placement_host_gpus's
            # flat rows (host columns on every GPU's) they doubled the values a wide search parsed.
            found = [n for n in missing if n in self.cache]
            for pos in await self.gw.read("placement_host_positions", {"hosts": found}) if found else []:
                read = self.cache[pos["host"]]
                read.spines, read.cores = frozenset(pos["spines"] or ()), frozenset(pos["cores"] or ())
            for name, site in (await host_sites(self.gw, [n for n in missing if n in self.cache])).items():
                self.cache[name].site = site
                if locality.outside(site, self.sites):
                    for gpu in self.cache[name].gpus:
                        gpu.state = locality.OTHER_SITE
            for link in links:
                src = by_uuid.get(link["gpu"])
                if src is None:
                    continue
                gbps = float(link.get("bandwidth_gbps") or 0.0)
                src.direct[link["peer"]] = gbps
                peer = by_uuid.get(link["peer"])
                if peer is not None:
                    peer.direct[src.uuid] = gbps
        return [self.cache[n] for n in wanted if n in self.cache]

    async def hosts_by_free(self, exclude: list[str], model: str, limit: int, least: int = 1) -> list[Row]:
        """Hosts whose free counter is at least `least` (a per-host share: a host below it adds
        nothing), fullest first by their counters (the wide groups' search), read once per
        request: a diagnosis's relaxed and shrunk probes ask the same many times. A read for a
        smaller share serves a larger one: its rows come fullest first, so those holding the
        larger share are its first rows, the rows a read for that share would return."""
        key = (tuple(exclude), model, limit)
        cached = self.by_free.get(key)
        if cached is None or cached[0] > least:
            rows = await self.gw.read(
                "placement_hosts_by_free",
                {"first_size": MAX_HOST_GPUS, "last_size": least, "step": -1, "exclude": exclude, "model": model,
                 "limit": limit},
            )  # fmt: skip
            self.by_free[key] = cached = (least, rows)
        return [r for r in cached[1] if int(r["free"]) >= least]

    async def leaf_holds(self, n: int, share: int) -> bool:
        """Whether a rail-aligned set of n GPUs, `share` on each host (0: any even split), may
        exist by the counters: NICs cabled to a switch that keeps no counter
        (placement_nics_off_leaf), or a leaf whose hosts' counters hold it
        (placement_leaf_holds). Read once per request (per n and share): a diagnosis's probes
        ask again."""
        held = self.leaf_held.get((n, share))
        if held is None:
            rows = await self.gw.read("placement_leaf_holds", {"n": n, "share": share})
            held = self.leaf_held[(n, share)] = bool(rows)
        return held or await self.off_leaf()  # the leaf read first: the spine read only when it says no

    async def off_leaf(self) -> bool:
        """Whether any NIC is cabled to a switch that is not a leaf (placement_nics_off_leaf),
        read once per request."""
        if self.nics_off_leaf is None:
            self.nics_off_leaf = bool(await self.gw.read("placement_nics_off_leaf", {}))
        return self.nics_off_leaf

    def _settle(self, host: Host, gpu: Gpu, lease_expires_at: float | None) -> None:
        """The state placement judges a GPU by: a lapsed lease or a preemption plan frees it; a
        silent host (stale_after_s) or another site than the request's keeps it from being offered."""
        if gpu.state == "reserved" and lease_expires_at is not None and lease_expires_at < self.now:
            gpu.state = "free"
        if gpu.uuid in self.virtual_free:
            gpu.state = "free"
        if self.stale_before is not None and (host.received_at or self.now) < self.stale_before:
            # A host silent for longer than stale_after_s may be down: never offer its GPUs.
            gpu.state = "stale"

    def adopt(self, hosts: Iterable[tuple[HostMap, KeptHost]]) -> None:
        """Hosts read by a one-statement candidate query (fragment placement_host_maps), each
        with its topology (graphsvc.placement.topology_cache): their free GPUs only, which is all
        placement judges. A host already read stays as it was read. A free GPU its topology does
        not hold (the host's document changed between the two reads) is not offered."""
        for m, kept in hosts:
            if m["name"] in self.cache:
                continue
            host = Host(
                name=m["name"],
                rack=kept.rack,
                scalable_unit=kept.scalable_unit,
                leaves=list(kept.leaves),
                pod=kept.pod,
                received_at=m.get("received_at"),
                gpus=[],
                cluster=kept.cluster,
                spines=kept.spines,
                cores=kept.cores,
            )
            host.site = m.get("site")
            for live in m.get("gpus") or []:
                kept_gpu = kept.gpus.get(live[0])
                if kept_gpu is None:
                    continue
                gpu = kept_gpu.with_live(live)
                self._settle(host, gpu, live[LIVE_LEASE])
                host.gpus.append(gpu)
            host.gpus.sort(key=_INDEX)
            if locality.outside(host.site, self.sites):
                for gpu in host.gpus:
                    gpu.state = locality.OTHER_SITE
            self.cache[host.name] = host


_INDEX = attrgetter("index")


def _host(name: str, fields: GpuRow) -> Host:
    """A host with its fabric position and freshness, GPUs still to add (a flat row)."""
    return Host(
        name=name,
        rack=fields.get("rack"),
        scalable_unit=fields.get("scalable_unit"),
        leaves=list(fields.get("leaves") or []),
        pod=fields.get("pod"),
        received_at=fields.get("received_at"),
        gpus=[],
        cluster=fields.get("cluster"),
    )


class PlacementEngine:
    def __init__(
        self,
        gateway: Gateway,
        *,
        clock: Callable[[], float] = time.time,
        budget: SearchBudget | None = None,
        stale_after_s: float | None = None,
    ) -> None:
        self.gw = gateway
        self.clock = clock
        self.budget = budget or SearchBudget()
        self.stale_after_s = stale_after_s  # None: every host is offered, however silent
        self.facts = GraphFacts(gateway)  # the models and host count, shared with the reserve fast path
        self.scan_blocks_up_to = SCAN_BLOCKS_UP_TO
        self.block_tops = BlockTops()
        self.topology = TopologyCache()  # each host's topology between requests; free state never
        # Ends lapsed leases now (True: some ended). The candidate statements seek by free
        # counters, which give a lapsed lease's GPUs back only once its reservation has ended; the
        # reservation service sets this, so a placement that found nothing offers them as
        # `reserve` would take them, not only after the lease reaper's next run (up to 5 s later).
        self.reap_lapsed: Callable[[], Awaitable[bool]] | None = None

    async def models(self) -> list[str]:
        """The GPU models in the graph (graph_facts: kept for a minute, they change with hardware)."""
        return (await self.facts.fresh()).models

    async def fit_form(self, query: str) -> str:
        """Which form of a candidate statement to run: its `_scan` form on a cluster of at most
        `scan_blocks_up_to` hosts (counted with the models, graph_facts: a count a refresh behind
        only picks the other of two forms that answer alike), else the statement itself. The same
        on both stores: Neo4j has no stale index entries to avoid, and the scan was measured on
        FalkorDB only."""
        hosts = (await self.facts.fresh()).hosts
        return f"{query}{SCAN_SUFFIX}" if hosts <= self.scan_blocks_up_to else query

    async def _no_such_model(self, req: PlacementRequest) -> list[InfeasibleReason]:
        """A request naming a model the graph has no GPU of: its one reason, before any search
        (which would read every unit only to find nothing). Not in the cached model list: read it
        again (the model may have just arrived)."""
        if req.model_match is None or any(req.model_match.matches(m) for m in await self.models()):
            return []
        return await unknown_model(self.gw, req, (await self.facts.reread()).models)

    async def _place_slices(self, req: PlacementRequest, started: float) -> PlacementResult:
        """A MIG request: slices, never whole GPUs (placement.mig); an unknown profile is infeasible here."""
        try:
            found = await place_slices(self.gw, req, now=self.clock(), stale_after_s=self.stale_after_s)
        except RequestError as err:
            return PlacementResult([], [InfeasibleReason(err.field, err.message)], 0, 0.0)
        elapsed = (time.perf_counter() - started) * 1000
        return PlacementResult([], found.infeasible, found.searched, elapsed, mig_candidates=found.candidates)

    async def place(
        self,
        req: PlacementRequest,
        *,
        explain_infeasible: bool = True,
        virtual_free: frozenset[str] = frozenset(),
        extra_hosts: tuple[str, ...] = (),
        loader: HostLoader | None = None,
        reap: bool = True,
        tie_seed: int | None = None,
    ) -> PlacementResult:
        """Ranked candidates; `virtual_free` GPUs (on `extra_hosts`) count as free, for preemption plans.
        `loader`: hosts already read for this request (the diagnosis's searches reuse the first's).
        No candidate: lapsed leases are ended (`reap_lapsed`) and the search runs once more, unless
        `reap` is False (a request that found candidates costs no extra round trip; an infeasible
        one runs the diagnosis's searches anyway). `tie_seed`: hosts equally good for a multi-host choice
        are taken in an order of this seed's, not by name (a reserve that collided with concurrent
        ones looks again elsewhere than they do)."""
        started = time.perf_counter()
        req = req.validated()
        if req.mig_profile is not None:
            return await self._place_slices(req, started)
        unknown = await self._no_such_model(req)
        if unknown:  # answered without a search
            elapsed = (time.perf_counter() - started) * 1000
            return PlacementResult([], unknown if explain_infeasible else [], 0, elapsed)
        search = _Search(self, req, virtual_free, tie_seed)
        if loader is not None and loader.sites == req.site_set and not virtual_free:
            search.loader = loader
        each_model = await self.models() if req.model is None and not virtual_free else []
        if len(each_model) >= 2:
            search.blocks += EACH_MODEL_BLOCKS * len(each_model)
        await search.run()
        await search.search_each_model(each_model)
        if extra_hosts:
            await search.search_extra(list(extra_hosts))
        if req.prefer_hosts:
            # "Preferred hosts first" (the ranking's first key) holds only for hosts the search
            # read: its pages read by free count and stop once enough is found, so a preferred host
            # further down was never a candidate (a demo user's `8xH100 prefer=h100-su4-n21` got
            # other hosts, and the preferred one not even at limit=20).
            await search.search_extra([h for h in req.prefer_hosts if h not in req.exclude_hosts])
        candidates = await search.finish()
        if not candidates and reap and not virtual_free and self.reap_lapsed and await self.reap_lapsed():
            return await self.place(
                req, explain_infeasible=explain_infeasible, extra_hosts=extra_hosts, reap=False, tie_seed=tie_seed
            )
        if req.cross_site:
            await locality.annotate(self.gw, candidates)  # the inter-site link as the bottleneck
        infeasible = []
        if not candidates and explain_infeasible:
            infeasible = (
                await unknown_model(self.gw, req, await self.models())
                or await unmet_capabilities(self.gw, req)
                or await diagnose(self, req, search.loader if not virtual_free else None)
            )
        return PlacementResult(
            candidates=candidates,
            infeasible=infeasible,
            searched_units=search.units_read,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            statements=search.statements,
        )

    async def fits(self, req: PlacementRequest, *, loader: HostLoader | None = None) -> bool:
        """Whether `place(req, explain_infeasible=False, loader=loader)` finds any candidate: the
        diagnosis's probe. The searches `place` runs, over the same units in the same order,
        stopping at the first candidate, where `place` reads on for `limit` and two more to
        rank, then builds and scores each: whether one exists is all a probe asks (at 8k GPUs the
        probe of `256xH100 per-host=8 rail-aligned` paged through the leaves, and then read the
        wide search's hosts, for three candidates, where the first leaf it reads holds one).
        Until a first candidate is found nothing differs (the budget included, _fit_pages), so
        the answer is `place`'s; lapsed leases are ended and searched again with a fresh read, as
        `place` does. A probe also reads a leaf page in parts (_fit_pages), pages no leaf for
        a rail-aligned request no leaf's counters hold (aligned_may_fit), and pages leaves
        fullest first where its budget reads them all (reads_every_leaf)."""
        req = req.validated()
        if req.mig_profile is not None:
            return bool((await self.place(req, explain_infeasible=False, loader=loader)).candidates)
        if await self._no_such_model(req):
            return False
        if await self._first_found(req, loader):
            return True
        return bool(self.reap_lapsed and await self.reap_lapsed() and await self._first_found(req, None))

    async def _first_found(self, req: PlacementRequest, loader: HostLoader | None) -> bool:
        """`place`'s searches (no preemption plan, no extra hosts), until the first candidate."""
        search = _Search(self, req, frozenset(), first_only=True)
        if loader is not None and loader.sites == req.site_set:
            search.loader = loader
        each_model = await self.models() if req.model is None else []
        if len(each_model) >= 2:
            search.blocks += EACH_MODEL_BLOCKS * len(each_model)
        await search.run()
        if not search.found:
            await search.search_each_model(each_model)
        if not search.found and req.prefer_hosts:
            await search.search_extra([h for h in req.prefer_hosts if h not in req.exclude_hosts])
        return bool(search.found)


class _Search:
    def __init__(
        self,
        engine: PlacementEngine,
        req: PlacementRequest,
        virtual_free: frozenset[str],
        tie_seed: int | None = None,
        *,
        first_only: bool = False,
    ) -> None:
        self.engine = engine
        self.tie_seed = tie_seed
        self.req = req
        self.gw = engine.gw
        now = engine.clock()
        stale_before = now - engine.stale_after_s if engine.stale_after_s is not None else None
        self.loader = HostLoader(engine.gw, now, virtual_free, stale_before, req.site_set)
        self.found: dict[frozenset[str], list[Gpu]] = {}
        self.units_read = 0
        # A coarse substring the candidate queries filter on; `eligible` matches exactly.
        self.model = req.model_match.prefilter if req.model_match is not None else ""
        self.model_params = prefilter_params(self.model, [])  # with the model list: run()
        self.exclude = list(req.exclude_hosts)
        # Read a few more than asked, so ranking has something to choose from.
        self.want = req.limit + 2
        # How many candidates end the search: `want`, or the first (PlacementEngine.fits: whether
        # any exists). Pages are sized by `want` either way, so the units read until then are
        # the same.
        self.first_only = first_only
        self.enough_at = 1 if first_only else self.want
        # The largest free blocks each candidate statement reads, for ranking (finish: one per
        # candidate found and two more; a request on several models finds more, `place`).
        self.blocks = self.want + 4
        self.statements: list[Statement] = []  # the candidate statements run, for `explain`
        # The largest free blocks a one-statement query read with its candidates: (k, hosts, domains).
        self.prefetched: tuple[int, list[BlockRow], list[BlockRow]] | None = None
        # The most free GPUs any host has, as the last candidate statement's free blocks read it.
        self.fullest_host: int | None = None
        # The first page of a candidate statement read for it with other models' (read_first_pages):
        # the statement, the page size it was read with, and its row.
        self.first_page: tuple[str, int, FitRow] | None = None
        # Each host's GPUs this request may take (`usable`), by the host object read: the wider
        # search reads on and chooses again over every host read so far, and checked each GPU of
        # each of them again each time (a huge infeasible request's diagnosis, docs/benchmarks.md
        # stop 58). The host kept beside its list, so its id is not reused while this search lives.
        self._usable: dict[int, tuple[Host, list[Gpu]]] = {}

    def usable(self, host: Host) -> list[Gpu]:
        """The host's GPUs this request may take: eligible (model, memory, health, temperature)
        and on a rail whose NIC is up. Read once per host object in this search."""
        kept = self._usable.get(id(host))
        if kept is not None and kept[0] is host:
            return kept[1]
        req = self.req
        gpus = [g for g in host.gpus if eligible(g, req) and rail_up(g)]
        self._usable[id(host)] = (host, gpus)
        return gpus

    def tie(self, name: str) -> tuple[int, str]:
        """How hosts equally good for a multi-host choice are ordered: by name, or with a seed in
        the seed's order (then by name)."""
        return (0, name) if self.tie_seed is None else (zlib.crc32(f"{self.tie_seed}/{name}".encode()), name)

    def enough(self) -> bool:
        return len(self.found) >= self.enough_at or self.units_read >= self.engine.budget.units

    def add(self, gpus: list[Gpu] | None) -> None:
        if gpus and (self.req.cross_site or not locality.spans_sites(gpus, self.loader.cache)):
            self.found.setdefault(frozenset(g.uuid for g in gpus), gpus)

    async def run(self) -> None:
        req = self.req
        if self.model:
            self.model_params = prefilter_params(self.model, await self.engine.models())
        per_host = req.gpus_per_host
        # A rail-aligned request no leaf's counters hold (placement_leaf_holds) pages no leaf, a
        # probe's or `place`'s (a reserve's): placement_leaves_fit opens no leaf for it (a window
        # implies that leaf holds it by the same counters), and `251xH100 rail-aligned` at 8k GPUs
        # paged every rail-0 leaf (three statements, ~30 ms of the store's time) to find none
        # before search_wider asked the same bound (docs/benchmarks.md, "Stop 64").
        if self.leaves_first() and await self.aligned_may_fit():
            # No host was ever seen with this many free GPUs: the leaf statement first, as the
            # one-host statement would find nothing (~4 ms at 8k GPUs). Its free blocks name the
            # cluster's fullest hosts by the counters the one-host statement seeks on; when one
            # holds the request after all, the search starts over in the usual order, so the
            # answer is the one that order gives.
            await self.search_leaves()
            if self.fullest_host is not None and self.fullest_host < req.gpus:
                await self.search_wider()
                return
            self.found.clear()
            self.units_read = 0
        if req.needs_one_domain:
            await self.search_domains()
        elif per_host is None or per_host == req.gpus:
            await self.search_hosts()
        if not self.enough() and (per_host is None or per_host < req.gpus) and self.may_span_hosts():
            await self.search_multi_host()

    def may_span_hosts(self) -> bool:
        """Whether the request lets its GPUs sit on several hosts: not bound to one NVLink domain,
        and at least one InfiniBand hop allowed."""
        req = self.req
        return not req.needs_one_domain and (req.max_ib_hops is None or req.max_ib_hops >= 1)

    def leaves_first(self) -> bool:
        """Whether `run` reads leaves first: no host was ever seen with as many free GPUs as the
        request wants on one host, and the request may span hosts."""
        hint = self.engine.block_tops.host
        return self.req.gpus_per_host is None and self.may_span_hosts() and hint is not None and self.req.gpus > hint

    def host_mode(self) -> str:
        """$mode of the one-host statement: 'domain' when the GPUs must share an NVLink domain."""
        req = self.req
        one_domain = req.gpus > 1 and (req.nvlink is not NVLinkRequirement.NONE or req.same_nvlink_domain)
        return "domain" if one_domain else "none"

    def fit_params(self, *, rail_up: bool) -> dict[str, object]:
        """What every one-statement candidate query takes besides its sizes and page."""
        req, loader = self.req, self.loader
        return {
            "exclude": self.exclude,
            "model": self.model,
            **self.model_params,
            "filters": gpu_filters(req, rail_up=rail_up),
            "now": loader.now,
            "stale_before": loader.stale_before if loader.stale_before is not None else 0.0,
            "virtual_free": sorted(loader.virtual_free),
            "blocks": self.blocks,
            **self.engine.block_tops.params(),
            "tie_buckets": TIE_BUCKETS,
        }

    async def adopt(self, maps: list[HostMap]) -> None:
        """A candidate statement's hosts join the loader with their topology: kept by the engine,
        or read now (one statement for every host whose key it lacks) and kept."""
        topology = self.engine.topology
        read: dict[str, KeptHost] = {}
        missing = topology.missing(maps)
        if missing:
            params: dict[str, object] = {"hosts": missing}
            name = "placement_host_topology"
            self.statements.append(Statement(name, self.gw.registry[name].text, params))
            rows = cast(list[dict[str, list[TopologyRow]]], await self.gw.read(name, params))
            read = topology.keep(rows[0]["hosts"] if rows else [])
        self.loader.adopt(topology.join(maps, read))

    async def read_fit(self, query: str, params: dict[str, object]) -> FitRow:
        """One candidate statement (in the form `fit_form` picks, with the parameters that form
        takes): its hosts join the loader, its free blocks are kept for scoring. The first page
        of the one-host or one-domain statement may have been read already (`first_page`)."""
        if self.first_page is not None and query == self.first_page[0]:
            _, limit, row = self.first_page
            self.first_page = None
            if params["skip"] == 0 and params["limit"] == limit:  # its hosts joined the loader then
                self.fullest_host = _largest(row["host_blocks"])
                self.keep_first_blocks(row, params)  # a later leaf page then reads none of its own
                return row
        if query in BLOCKS_BESIDE:
            return await self.read_fit_beside_blocks(query, params)
        form = self.gw.registry[await self.engine.fit_form(query)]
        dropped = self.gw.registry[query].parameters - form.parameters  # the seek hints: the gateway checks the rest
        params = {k: v for k, v in params.items() if k not in dropped}
        self.statements.append(Statement(form.name, form.text, dict(params)))
        rows = await self.gw.read(form.name, params)
        if not rows:  # no unit to read at all
            return FitRow(scanned=0, found=[], hosts=[], host_blocks=[], domain_blocks=[])
        return await self.took_fit(cast(FitRow, rows[0]), params)

    async def read_fit_beside_blocks(self, query: str, params: dict[str, object]) -> FitRow:
        """A candidate statement that leaves the cluster's free blocks out (BLOCKS_BESIDE): the
        blocks are read by their own statement, sent at the same time on another connection, with
        the first page only (later pages keep them). Why: the store runs the two at once; in one
        statement they ran one after the other (docs/benchmarks.md, "Stop 56")."""
        name, own = await self.recorded(query, params)
        if self.prefetched is not None:
            _, host_blocks, domain_blocks = self.prefetched
            rows = await self.gw.read(name, own)
        elif self.first_only and self.req.gpus_per_host is not None:
            # A probe with a per-host share uses no free block: they rank candidates (`finish`,
            # which a probe never reaches) and name the fullest host for `run`'s leaves-first
            # path, which a per-host share never takes; the engine's hint (BlockTops) is only a
            # hint. The diagnosis of `251xH100 rail-aligned` read them once per such probe.
            host_blocks, domain_blocks = [], []
            rows = await self.gw.read(name, own)
        else:
            blocks_name, blocks_params = await self.recorded(BLOCKS_QUERY, params)
            rows, blocks_row = await both_reads(self.gw.read(name, own), self.gw.read(blocks_name, blocks_params))
            host_blocks = cast(list[BlockRow], blocks_row[0]["host_blocks"]) if blocks_row else []
            domain_blocks = cast(list[BlockRow], blocks_row[0]["domain_blocks"]) if blocks_row else []
        if not rows:  # no unit to read at all
            return FitRow(scanned=0, found=[], hosts=[], host_blocks=[], domain_blocks=[])
        row = cast(FitRow, {**rows[0], "host_blocks": host_blocks, "domain_blocks": domain_blocks})
        return await self.took_fit(row, params)

    async def recorded(self, query: str, params: dict[str, object]) -> tuple[str, dict[str, object]]:
        """The form `fit_form` picks for `query` and those of `params` it takes (of a set meant for
        several statements), recorded for `explain`."""
        form = self.gw.registry[await self.engine.fit_form(query)]
        own = {k: v for k, v in params.items() if k in form.parameters}
        self.statements.append(Statement(form.name, form.text, dict(own)))
        return form.name, own

    async def took_fit(self, row: FitRow, params: dict[str, object]) -> FitRow:
        """A candidate statement's row: its hosts join the loader, its free blocks are kept."""
        await self.adopt(row["hosts"])
        self.engine.block_tops.saw(row["host_blocks"], row["domain_blocks"])
        self.fullest_host = _largest(row["host_blocks"])
        self.keep_first_blocks(row, params)
        return row

    def keep_first_blocks(self, row: FitRow, params: dict[str, object]) -> None:
        """The first free blocks this search read, with the count they were read for (`finish`)."""
        if self.prefetched is None:
            self.prefetched = (int(cast(int, params["blocks"])), row["host_blocks"], row["domain_blocks"])

    async def _fit_pages(
        self,
        query: str,
        params: dict[str, object],
        take: TakeUnits,
        *,
        first: int,
        probe: bool = True,
        slack: int = PAGE_SLACK,
        bucketed: bool = False,
        parts: bool = False,
        parts_grow: bool = False,
        fullest: bool = False,
    ) -> None:
        """Pages of a one-statement query: usually one statement answers the request. Units are
        taken in best-fit order: free counts nearest `first` first, then by name (`bucketed`: by
        tie bucket, then name, the order placement_domains_fit pages in). The first page
        holds `slack` units more than the candidates wanted, for units that turn out not to fit
        (a host whose free GPUs are too hot, say); the units past those that do fit are read but
        unused, so `slack` is what a second statement is worth avoiding.

        `parts` (a probe, `first_only`): each page is read in parts, 1, 2, 4 ... units, up to the
        page's end, and the search stops at the part where it finds (a leaf page's units past it
        cost their windows' GPU maps, read and parsed for nothing). The pages, the units judged
        and the budget are the usual ones until then: a page that may reach the budget is read
        whole (its last units then decide what `take` judges, _take_leaves).

        `parts_grow`: the parts keep doubling from page to page (1, 2 | 4, ...), where each page
        restarted at 1: for a probe whose leaves open only where their GPUs hold its share
        (placement_leaves_fit, $ready), a leaf that opens none costs little, and each statement
        its round trip and seek (`248xH100 per-host=8 rail-aligned` at 8k GPUs: nine statements
        for 17 leaves, the fitting one last). They grow to PROBE_PART_MOST units, no further.

        `fullest`: units are taken most free first (the order a probe's leaf page reads them in,
        search_leaves), not nearest `first`."""
        skip = 0
        page = self.want + slack
        grown = 1  # the next part's size, where parts grow across pages
        while not self.enough():
            end = skip + page
            first_part = grown if parts_grow else 1
            part = first_part if parts and self.units_read + page < self.engine.budget.units else page
            while True:
                size = min(part, end - skip)
                lazy = {"probe": skip + size} if probe else {}
                row = await self.read_fit(query, {**params, "skip": skip, "limit": size, **lazy})
                scanned = int(row["scanned"])
                skip += scanned
                self.units_read += scanned
                # Best fit first, as the seek ordered them (a collect does not keep that order).
                await take(
                    sorted(
                        (u for u in row["found"] if u),
                        key=lambda u: (
                            -u["free"] if fullest else abs(u["free"] - first),
                            tie_bucket(u["unit"]) if bucketed else 0,
                            u["unit"],
                        ),
                    )
                )
                if scanned < size:
                    return
                if skip >= end or self.found:
                    break
                part = min(part * 2, PROBE_PART_MOST) if parts_grow else part * 2
            grown = min(part * 2, PROBE_PART_MOST)
            missing = self.want - len(self.found)
            page = min(max(page * 2, 2 * missing + 2), self.engine.budget.page)

    async def _take_hosts(self, units: list[FitUnit]) -> None:
        for unit in units:
            host = self.loader.cache.get(unit["unit"])
            if host is not None:
                self.add(choose_in_host(host.gpus, self.req.gpus, self.req))

    async def _take_domains(self, units: list[FitUnit]) -> None:
        for unit in units:
            hosts = [self.loader.cache[h] for h in unit.get("hosts") or [] if h in self.loader.cache]
            self.add(self.choose_in_domain(unit["unit"], hosts))

    def sizes(self, top: int) -> dict[str, int]:
        """Free counts to probe, as a Cypher range: smallest sufficient first (best fit), or largest (spread)."""
        n = self.req.gpus if self.req.gpus_per_host is None else self.req.gpus_per_host
        start = max(1, n)
        end = max(start, top)
        if self.req.packing is Packing.SPREAD:
            return {"first_size": end, "last_size": start, "step": -1}
        return {"first_size": start, "last_size": end, "step": 1}

    async def search_each_model(self, models: list[str]) -> None:
        """A request naming no model, on a cluster of several: each model's best fits join the
        candidates, so ranking can weigh bandwidth across models (score.py), not only the
        tightest units the shared search happened to read first."""
        if len(models) < 2:
            return
        subs = [
            _Search(self.engine, self.req.with_(model=model, limit=1), frozenset(), first_only=self.first_only)
            for model in models
        ]
        for sub in subs:
            sub.loader = self.loader  # one read of each host per request
        await self.read_first_pages(subs, models)
        for sub in subs:
            await sub.run()
            self.units_read += sub.units_read
            self.statements.extend(sub.statements)
            for key, gpus in sub.found.items():
                self.found.setdefault(key, gpus)
            if self.first_only and self.found:
                return

    async def read_first_pages(self, subs: list[_Search], models: list[str]) -> None:
        """Every model's first page of the one-host or one-domain statement in one statement
        (placement_hosts_fit_each_model, placement_domains_fit_each_model), each handed to its
        model's search, which reads it instead of running its own (`first_page`). On a cluster
        small enough for the statements' scan forms only (these scan every host or domain), for
        requests whose per-model searches start with that statement; a search that goes another
        way leaves its page unread. Each search then answers as if it had read its page itself
        (the statements say why)."""
        req = self.req
        if any(not s.model for s in subs):
            return
        first = subs[0]
        params: dict[str, object] = {**first.fit_params(rail_up=False), "n": req.gpus}
        if req.needs_one_domain:  # run() starts with search_domains
            query = "placement_domains_fit"
            params |= first.sizes(MAX_DOMAIN_GPUS)
        elif req.gpus_per_host in (None, req.gpus):  # search_hosts, unless leaves come first
            if first.leaves_first():
                return  # each search reads leaves first (run): its page would go unread
            query = "placement_hosts_fit"
            params |= {**first.sizes(MAX_HOST_GPUS), "mode": first.host_mode()}
        else:
            return
        if not (await self.engine.fit_form(query)).endswith(SCAN_SUFFIX):
            return
        page = first.want + PAGE_SLACK  # what _fit_pages asks of its first statement
        each = {s.model: prefilter_params(s.model, models)["prefilter_models"] for s in subs}  # a family once
        params |= {
            "limit": page,
            "model": "",  # the per-GPU prefilter: any model (the statements say why)
            "known": prefilter_params(first.model, models)["known"],
            "each": [{"model": model, "prefilter_models": names} for model, names in each.items()],
        }
        name = f"{query}_each_model"
        form = self.gw.registry[name]
        params = {k: v for k, v in params.items() if k in form.parameters}
        self.statements.append(Statement(name, form.text, dict(params)))
        rows = await self.gw.read(name, params)
        if not rows:
            return
        row = rows[0]
        await self.adopt(row["hosts"])
        self.engine.block_tops.saw(row["host_blocks"], row["domain_blocks"])
        pages = {str(p["model"]): p for p in row["pages"]}
        for sub in subs:
            mine = pages.get(sub.model)
            scanned, found = (int(mine["scanned"]), list(mine["found"])) if mine else (0, [])
            own = FitRow(scanned=scanned, found=found, hosts=[], host_blocks=row["host_blocks"],
                         domain_blocks=row["domain_blocks"])  # fmt: skip
            sub.first_page = (query, page, own)

    async def search_hosts(self) -> None:
        req = self.req
        params = {**self.sizes(MAX_HOST_GPUS), **self.fit_params(rail_up=False), "n": req.gpus}
        await self._fit_pages(
            "placement_hosts_fit",
            {**params, "mode": self.host_mode()},
            self._take_hosts,
            first=int(cast(int, params["first_size"])),
        )

    async def search_domains(self) -> None:
        params = {**self.sizes(MAX_DOMAIN_GPUS), **self.fit_params(rail_up=False), "n": self.req.gpus}
        await self._fit_pages(
            "placement_domains_fit",
            params,
            self._take_domains,
            first=int(cast(int, params["first_size"])),
            bucketed=True,
        )

    async def search_leaves(self) -> None:
        """Hosts under one leaf (one IB hop): leaves, their hosts and the first hosts' GPUs in one statement."""
        req = self.req
        per_host = req.gpus_per_host or 1
        # The per-GPU constraints are judged in Python here (choose_across_hosts); a probe's
        # statement also judges what the store can of them ($filters, $ready), to open no leaf
        # whose hosts' GPUs cannot hold the share (placement_leaves_fit says why).
        params = self.fit_params(rail_up=True)
        params |= {
            "ready": self.first_only,
            "min_free": req.gpus,
            "gpus": req.gpus,
            "per_host": req.gpus_per_host or 0,
            "host_min": per_host,
            "need": -(-req.gpus // per_host),
            "extra": LEAF_EXTRA_HOSTS,
            "fullest_first": req.gpus_per_host is None or req.packing is Packing.SPREAD,
            "even": req.rail_aligned and req.gpus_per_host is None,  # the same share on each host
        }
        fullest = self.first_only and await self.reads_every_leaf(req.gpus)
        params["fullest_leaves"] = fullest
        # No slack: each leaf read but unused costs its window of hosts' GPU maps (10 hosts for
        # 32 GPUs 4 per host: a third of the statement), and leaves seldom add nothing (a leaf
        # widens its window itself, choose_in_group; one adds nothing when no set of its hosts
        # fits, when its set was found already (hosts under two leaves) or spans sites). Such a
        # leaf costs a second statement instead, which reads the graph as it is by then.
        await self._fit_pages(
            "placement_leaves_fit",
            params,
            self._take_leaves,
            first=req.gpus,
            probe=False,
            slack=0,
            parts=self.first_only,
            parts_grow=self.first_only and req.gpus_per_host is not None,  # $ready judges its leaves
            fullest=fullest,
        )

    async def reads_every_leaf(self, min_free: int) -> bool:
        """Whether this search's budget reads every leaf a leaf page could hold for `min_free`
        (placement_leaf_total): then a probe pages them fullest first, where a candidate is
        likeliest, and still answers as `place`, which pages them fewest first (best fit): each
        judges every leaf until its first candidate, so one exists for both or for neither. Where
        the budget may stop `place` part-way, the probe keeps `place`'s order (`fits`). At 8k GPUs
        the probe of `248xH100 per-host=8 rail-aligned` paged 19 leaves in six statements to reach
        the fullest (~20 ms of a ~50 ms diagnosis), which holds it. Counted by the page's own
        fragment, up to one leaf more than the budget has left."""
        left = self.engine.budget.units - self.units_read
        if left <= 0:
            return False
        params = {"min_free": min_free, "fullest_leaves": False, "skip": 0, "limit": left + 1}
        rows = await self.gw.read(await self.engine.fit_form("placement_leaf_total"), params)
        return bool(rows) and int(cast(int, rows[0]["leaves"])) <= left

    async def _take_leaves(self, units: list[FitUnit]) -> None:
        """Every unit of the page read is judged until enough candidates are found, the budget
        reached or not: the budget bounds what is read, and these units were. Stopping at the
        budget after the first unit judged made `place` and its probe disagree: a probe's page
        ($ready) gives no window to a leaf whose GPUs cannot hold the share, so it judged the next
        leaf and found a candidate where `place`, judging the first leaf by its counters, found
        none and stopped (a budget of 2 units, tests/unit/test_rail_probes.py)."""
        for unit in units:
            if not unit.get("window"):
                continue  # its hosts cannot hold the request by their counters (placement_leaves_fit)
            members = {str(m[0]): int(cast(int, m[1])) for m in unit.get("members") or []}
            self.add(await self.choose_in_group(members))
            if len(self.found) >= self.enough_at:
                return

    async def search_multi_host(self) -> None:
        # A probe asks the leaf counters first, and so does `place` for a request larger than any
        # host seen (leaves_first: `run` asked them already where it read leaves first; a search
        # starting with no hint learns it from the one-host statement's free blocks).
        if (self.first_only or self.leaves_first()) and not await self.aligned_may_fit():
            return
        if self.req.max_ib_hops is None or self.req.max_ib_hops >= 1:
            await self.search_leaves()
        await self.search_wider()

    async def aligned_may_fit(self) -> bool:
        """Whether a rail-aligned request may fit across hosts, by the bound search_wider asks
        (placement_leaf_holds; True for any other request). It also bounds the leaf search:
        placement_leaves_fit gives a leaf a window only where its counter holds the request and
        enough of its hosts' counters hold the share (or, unsplit, an even split), among fewer
        hosts and leaves than placement_leaf_holds counts. Asked first by a probe (`fits`): the
        diagnosis's shrunk probes of shares no leaf holds (`250xH100 per-host=5 rail-aligned` on
        32-host units) paged through every leaf, four statements each, to find no window."""
        req = self.req
        if not req.rail_aligned or self.loader.virtual_free:
            return True
        return await self.loader.leaf_holds(req.gpus, req.gpus_per_host or 0)

    async def search_wider(self) -> None:
        req = self.req
        if self.enough() or (req.max_ib_hops is not None and req.max_ib_hops < 3):
            return
        # Wider groups: one pod (3 hops), or the whole cluster (no limit or no fabric known).
        # Rows come fullest first. A host whose counter cannot hold a per-host share adds nothing
        # (not read); when the rest cannot hold the request, no group can (the counters bound
        # every group).
        share = req.gpus_per_host or 1
        counted = req.rail_aligned and not self.loader.virtual_free  # the counters count every free GPU
        if counted and not await self.loader.leaf_holds(req.gpus, req.gpus_per_host or 0):
            return  # every host of an aligned set reaches one leaf (placement_leaf_holds): none holds it
        rows = await self.loader.hosts_by_free(self.exclude, self.model, self.engine.budget.units, least=share)
        self.units_read += len(rows)
        names = [str(r["host"]) for r in rows]
        free = [int(r["free"]) for r in rows]
        too_few = sum(free) < req.gpus if req.gpus_per_host is None else len(names) < req.gpus // share
        if too_few:
            return
        by_pod = req.max_ib_hops is not None and req.max_ib_hops < 5
        # One pod per group: every host is needed to see each pod whole. The whole cluster (per
        # site) as one group: read the fullest hosts that cover the request by their counters,
        # and more (doubling) only while no placement is found among them (#15: an infeasible
        # request's relaxed probes no longer read every host's GPUs).
        need = cover(free, req.gpus) if req.gpus_per_host is None else req.gpus // share
        loaded = len(names) if by_pod else need + LEAF_EXTRA_HOSTS
        while True:
            loaded = min(loaded, len(names))
            hosts = await self.loader.load(names[:loaded])
            found = False
            for members in _site_hop_groups(hosts, req):
                chosen = self.choose_across_hosts(members)
                found = found or chosen is not None
                self.add(chosen)
            if found or loaded >= len(names):
                return
            if req.gpus_per_host is None and not req.rail_aligned:
                # Read on by the shortfall (counters count GPUs a request may refuse). A rail-aligned
                # set may lack alignment, not GPUs: doubling, or a probe re-chose over all hosts
                # read so far once per few hosts read (a huge request's diagnosis, stop 59).
                usable = sum(len(self.usable(h)) for h in hosts)
                short = max(1, req.gpus - usable)
                loaded += cover(free[loaded:], short + short // 4) + LEAF_EXTRA_HOSTS
            else:
                loaded *= 2

    async def choose_in_group(self, free_by_host: dict[str, int]) -> list[Gpu] | None:
        """Load a group's hosts a few at a time, best fit first, until a placement is found. Only
        for a leaf whose hosts' counters hold the request (placement_leaves_fit gave it a window)."""
        req = self.req
        per_host = req.gpus_per_host or 1
        spread = req.packing is Packing.SPREAD
        names = sorted(
            (h for h, free in free_by_host.items() if free >= per_host and h not in req.exclude_hosts),
            key=lambda h: (-free_by_host[h] if spread else free_by_host[h], self.tie(h)),
        )
        if req.gpus_per_host is None:
            names.sort(key=lambda h: (-free_by_host[h], self.tie(h)))  # fewest hosts: fullest first
            need = cover([free_by_host[h] for h in names], req.gpus)
        else:
            need = -(-req.gpus // per_host)
        # The first hosts placement_leaves_fit already read (the same window).
        loaded = min(len(names), need + LEAF_EXTRA_HOSTS)
        while True:
            hosts = await self.loader.load(names[:loaded])
            # A leaf's hosts are of its cluster, unless one moved cluster since the fabric import
            # (docs/ingest.md: it keeps its cables until the next): never a set across two
            # (locality.site_key; a probe's case).
            groups: dict[tuple[str, str] | None, list[Host]] = {}
            for host in hosts:
                groups.setdefault(locality.site_key(host, req), []).append(host)
            chosen = next(filter(None, map(self.choose_across_hosts, groups.values())), None)
            if chosen is not None or loaded >= len(names):
                return chosen
            loaded = min(len(names), loaded * 2)

    async def search_extra(self, names: list[str]) -> None:
        """Named hosts searched whatever their counters say (GPUs a preemption would free, or
        the request's preferred hosts): each host, each NVLink domain across them, each leaf
        group across them."""
        req = self.req
        hosts = await self.loader.load(names)
        if not req.needs_one_domain and (req.gpus_per_host in (None, req.gpus)):
            for host in hosts:
                self.add(choose_in_host(host.gpus, req.gpus, req))
        domains: dict[str, list[Host]] = {}
        for host in hosts:
            # In GPU order, never a set's: the order candidates are found in breaks ranking's ties,
            # and a set of strings iterates in an order Python salts per process (a preemption plan
            # took another GPU pair after a restart).
            for dom in dict.fromkeys(g.nvlink_domain for g in host.gpus if g.nvlink_domain):
                domains.setdefault(dom, []).append(host)
        for dom, members in domains.items():
            if req.needs_one_domain or req.gpus_per_host is None:
                self.add(self.choose_in_domain(dom, members))
        if not req.needs_one_domain and (req.max_ib_hops is None or req.max_ib_hops >= 1):
            groups: dict[tuple[tuple[str, str] | None, str], list[Host]] = {}
            units = leaf_units(hosts)
            for host in hosts:
                groups.setdefault((locality.site_key(host, req), units.get(host.name, "")), []).append(host)
            for members in groups.values():
                self.add(self.choose_across_hosts(members))
            if req.max_ib_hops is None or req.max_ib_hops >= 3:
                self.add_wide_groups(hosts)

    def add_wide_groups(self, extra: list[Host]) -> None:
        """Placements across leaves that a preemption would make possible (#18): the victims may sit
        under several leaves, each too few alone. The victims' hosts and every host the search
        already read (the free ones) form one group per pod (3 hops) or per cluster (no limit)."""
        req = self.req
        hosts = {h.name: h for h in [*self.loader.cache.values(), *extra]}
        units = leaf_units(hosts.values())
        for members in _site_hop_groups(sorted(hosts.values(), key=lambda h: h.name), req):
            if len({units.get(h.name, "") for h in members}) > 1:
                self.add(self.choose_across_hosts(members))

    def choose_in_domain(self, domain: str, hosts: list[Host]) -> list[Gpu] | None:
        """n GPUs of one NVLink domain, on as few hosts as possible (trays kept whole)."""
        req = self.req
        pools = []
        for host in hosts:
            members = [g for g in host.gpus if g.nvlink_domain == domain and eligible(g, req)]
            if members:
                pools.append((host, members))
        if sum(len(m) for _, m in pools) < req.gpus:
            return None
        if len(pools) == 1 or any(len(m) >= req.gpus for _, m in pools):
            # Ties by host name, not the order the store listed the hosts in (a domain statement's
            # hosts come in its rows' order, which the two stores and the each-model form differ in).
            for _host, members in sorted(pools, key=lambda p: (len(p[1]), p[0].name)):
                if len(members) >= req.gpus:
                    return choose_in_host(members, req.gpus, req)
        if req.rail_aligned or not req.needs_one_domain:
            # Across trays where the rails carry traffic (aligned, or a request that asked for no
            # NVLink domain: search_extra's preferred or freed hosts), a GPU whose rail NIC is down
            # is left out, as the other multi-host paths leave it (`usable`). A preference made
            # such a set where the search without it answered "at most 7" (a probe's case).
            pools = [(h, up) for h, m in pools if (up := [g for g in m if rail_up(g)])]
        for group in _hop_groups(pools, req.max_ib_hops):
            chosen = self._even_split(group) if req.rail_aligned else self._fill(group, req.gpus)
            if chosen is None or not _hops_ok({g.host for g in chosen}, hosts, req.max_ib_hops):
                continue
            if req.nvlink is NVLinkRequirement.FULL_MESH and not _switched(chosen):
                continue
            return chosen
        return None

    def _fill(self, pools: list[tuple[Host, list[Gpu]]], n: int) -> list[Gpu] | None:
        """Fewest hosts: take the fullest first; finish on the host that fits the rest best."""
        chosen: list[Gpu] = []
        remaining = sorted(pools, key=lambda p: (-len(p[1]), self.tie(p[0].name)))
        while remaining and len(chosen) < n:
            need = n - len(chosen)
            fits = [p for p in remaining if len(p[1]) >= need]
            pick = min(fits, key=lambda p: (len(p[1]), self.tie(p[0].name))) if fits else remaining[0]
            remaining.remove(pick)
            take = sorted(pick[1], key=lambda g: g.index)[: min(need, len(pick[1]))]
            chosen.extend(take)
        return chosen if len(chosen) == n else None

    def choose_across_hosts(self, hosts: list[Host]) -> list[Gpu] | None:
        """A multi-host set inside one group of hosts (one leaf, one pod, or the cluster)."""
        req = self.req
        hosts = [h for h in hosts if h.name not in req.exclude_hosts]
        hosts = [h for h in hosts if _may_meet(h, req.max_ib_hops)]
        pools = [(h, self.usable(h)) for h in hosts]
        pools = [p for p in pools if p[1]]
        if req.gpus_per_host is not None:
            chosen = self._shares(pools, req.gpus_per_host)
        elif req.rail_aligned:
            chosen = self._even_split(pools)
        else:
            chosen = self._fill(pools, req.gpus)
        if chosen is None:
            return None
        names = {g.host for g in chosen}
        if not _hops_ok(names, hosts, req.max_ib_hops):
            return None
        if req.rail_aligned and len(names) > 1 and not rails.aligned(chosen):
            return None
        return chosen

    def _even_split(self, pools: list[tuple[Host, list[Gpu]]]) -> list[Gpu] | None:
        """An unsplit rail-aligned request: one host that holds it all, else the same share on
        each of as few hosts as hold it (rails.even_shares)."""
        n = self.req.gpus
        most = max((len(pool) for _host, pool in pools), default=0)
        if most >= n:
            return self._fill(pools, n)
        for p in rails.even_shares(n, most):
            chosen = self._shares(pools, p)
            if chosen is not None:
                return chosen
        return None

    def _shares(self, pools: list[tuple[Host, list[Gpu]]], p: int) -> list[Gpu] | None:
        """p GPUs on each of gpus / p hosts: best fit first (spread: emptiest first)."""
        req = self.req
        count = req.gpus // p
        options = [(host, pool) for host, pool in pools if len(pool) >= p]
        if len(options) < count:
            return None
        spread = req.packing is Packing.SPREAD
        options.sort(key=lambda o: (-(len(o[1]) - p) if spread else len(o[1]) - p, self.tie(o[0].name)))
        if req.rail_aligned:
            return rails.pick_shares(options, p, count, req)
        chosen: list[Gpu] = []
        used = 0
        for _host, pool in options:
            share = choose_in_host(pool, p, req)
            if share is None:
                continue
            chosen.extend(share)
            used += 1
            if used == count:
                return chosen
        return None

    async def finish(self) -> list[Candidate]:
        if not self.found:
            return []
        k = len(self.found) + 2
        if self.prefetched is not None and self.prefetched[0] >= k:
            _, host_rows, domain_rows = self.prefetched
            blocks = merge_blocks(host_rows[:k], domain_rows[:k])
        else:
            blocks = await largest_free_blocks(self.gw, k)
        now = self.engine.clock()
        ranked = sorted(
            [
                _candidate(self.req, gpus, await self.loader.load(dict.fromkeys(g.host for g in gpus)), blocks, now)
                for gpus in self.found.values()
            ],
            key=lambda scored: scored[0].sort_key,
            reverse=True,
        )
        # Rank order and reason only for the candidates answered (the search reads a few more).
        answered = [_complete(self.req, c, leftover) for c, _, leftover in ranked[: self.req.limit]]
        answered[0].reason += score.choice_note(
            ranked[0][1], [f for _, f, _ in ranked[1:]], names_model=self.req.model is not None
        )
        return answered


async def both_reads(first: Awaitable[list[Row]], second: Awaitable[list[Row]]) -> tuple[list[Row], list[Row]]:
    """Two reads at once; the first failure is raised as it is (a store error keeps its type, not
    wrapped in an exception group) once the other read was cancelled and collected."""
    tasks = [asyncio.ensure_future(first), asyncio.ensure_future(second)]
    try:
        a, b = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return a, b


def cover(free_counts: Iterable[int], n: int) -> int:
    """How many hosts, in this order, hold n free GPUs by their counters (all of them if they do not)."""
    total = count = 0
    for free in free_counts:
        if total >= n:
            break
        total += free
        count += 1
    return count


def _switched(gpus: list[Gpu]) -> bool:
    return len({g.nvlink_domain for g in gpus}) == 1 and gpus[0].domain_kind == "fabric-clique"


def _hop_groups(pools: list[tuple[Host, list[Gpu]]], limit: int | None) -> list[list[tuple[Host, list[Gpu]]]]:
    """The trays a domain's set is chosen from: all of them, then under a hop limit those of each
    leaf (1-2 hops) or pod (3-4 hops) in turn. An NVL72 rack's trays may hang off two leaf
    groups: filling the fullest trays first took one from each and failed the limit, where two
    trays of one leaf fit (a probe's case). Under a limit a tray no fabric import cabled is left
    out (_may_meet)."""
    if limit is None:
        return [pools]
    pools = [(h, m) for h, m in pools if _may_meet(h, limit)]
    if limit < 3:
        groups: dict[str, list[tuple[Host, list[Gpu]]]] = {}
        units = leaf_units(h for h, _ in pools)
        for host, members in pools:
            key = units.get(host.name)
            if key is not None:
                groups.setdefault(key, []).append((host, members))
        chosen = [groups[k] for k in sorted(groups)]
    else:
        of = {h.name: (h, m) for h, m in pools}
        chosen = [[of[h.name] for h in group] for group in hop_groups((h for h, _ in pools), limit)]
    return [pools, *chosen] if len(chosen) > 1 else [pools]


def _site_hop_groups(hosts: Iterable[Host], req: PlacementRequest) -> list[list[Host]]:
    """The wide searches' groups: never across sites or clusters (locality.site_key), and within
    one, hosts that all meet under the request's hop limit (model.hop_groups; no limit: all)."""
    sites: dict[tuple[str, str] | None, list[Host]] = {}
    for host in hosts:
        sites.setdefault(locality.site_key(host, req), []).append(host)
    return [group for members in sites.values() for group in hop_groups(members, req.max_ib_hops)]


def _may_meet(host: Host, limit: int | None) -> bool:
    """Whether a host may sit in a multi-host set under a hop limit: one no fabric import cabled is
    no known number of hops from any other (_hops_ok). Filling the fullest hosts first took it and
    refused the set afterwards, where the cabled hosts alone fit (a probe's case)."""
    return limit is None or bool(host.leaves)


def _hops_ok(names: set[str], hosts: list[Host], limit: int | None) -> bool:
    # No hop limit: nothing to check. The pairwise worst hop was computed and dropped here, ~30% of
    # a huge rail-aligned request's diagnosis (4044xH100 on 4,096 GPUs; docs/benchmarks.md, stop 58).
    if len(names) <= 1 or limit is None:
        return True
    worst = _max_hops([h for h in hosts if h.name in names])
    return worst is not None and worst <= limit


def _max_hops(hosts: list[Host]) -> int | None:
    """The most switches between two of these hosts (None: two no path is known between)."""
    worst, known = _worst_hops(hosts)
    return worst if known else None


def _worst_hops(hosts: list[Host]) -> tuple[int, bool]:
    """The most switches between two of these hosts that have a path, and whether every pair has
    one. Judged once per pair of fabric positions, not per pair of hosts: hops depend on a host's
    leaves, spines, cores and cluster only, and the hosts of a leaf group share them (512 hosts were
    131k pairs, ~0.3 s of a 4096-GPU `ib-hops<=5` placement; stop 62)."""
    at: dict[tuple[frozenset[str], frozenset[str], frozenset[str], str | None], list[Host]] = {}
    for host in hosts:
        at.setdefault((host.leaf_set, host.spines, host.cores, host.cluster), []).append(host)
    groups = list(at.values())
    worst, known = 0, True
    for i, group in enumerate(groups):
        pairs = [(group[0], other[0]) for other in groups[i + 1 :]]
        if len(group) > 1:
            pairs.append((group[0], group[1]))
        for a, b in pairs:
            h = hops(a, b)
            if h is None:
                known = False
            else:
                worst = max(worst, h)
    return worst, known


async def unknown_model(gw: Gateway, req: PlacementRequest, models: list[str] | None = None) -> list[InfeasibleReason]:
    """A request naming a model no GPU in the graph matches: say which models there are
    (`models`: the graph's models when the caller has just read them)."""
    match = req.model_match
    if match is None:
        return []
    if models is None:
        models = [str(r["model"]) for r in await gw.read("placement_gpu_models", {}) if r.get("model")]
    if any(match.matches(m) for m in models):
        return []
    listed = ", ".join(models[:20]) + (f" and {len(models) - 20} more" if len(models) > 20 else "")
    return [
        InfeasibleReason(
            "model",
            f"unknown model {req.model!r}: no GPU in the graph matches it (exactly, or by family name such as "
            f"H100 or MI300X); models here: {listed or 'none'}",
        )
    ]


async def unmet_capabilities(gw: Gateway, req: PlacementRequest) -> list[InfeasibleReason]:
    """A request whose capability constraints no model in the graph meets: say what each model lacks."""
    if not req.capabilities:
        return []
    models = [str(r["model"]) for r in await gw.read("placement_gpu_models", {}) if r.get("model")]
    if req.model_match is not None:
        models = [m for m in models if req.model_match.matches(m)]
    why = {m: req.capabilities.unmet(m) for m in models}
    if any(reason is None for reason in why.values()):
        return []
    listed = "; ".join(f"{m}: {reason}" for m, reason in sorted(why.items())[:20])
    return [InfeasibleReason("capabilities", f"no GPU model here meets the capabilities asked ({listed or 'no GPUs'})")]


async def largest_free_blocks(gw: Gateway, k: int) -> list[tuple[str, int]]:
    """Top free blocks (hosts and NVLink domains), largest first."""
    host_rows = await gw.read("largest_free_hosts", {"top": MAX_HOST_GPUS, "limit": k})
    domain_rows = await gw.read("largest_free_domains", {"top": MAX_DOMAIN_GPUS, "limit": k})
    return merge_blocks(cast(list[BlockRow], host_rows), cast(list[BlockRow], domain_rows))


def merge_blocks(host_rows: list[BlockRow], domain_rows: list[BlockRow]) -> list[tuple[str, int]]:
    """Hosts' and domains' blocks, largest first (hosts before domains on ties); null entries dropped."""
    blocks = [(str(r["unit"]), int(r["free"] or 0)) for r in host_rows + domain_rows if r and r["unit"] is not None]
    return sorted(blocks, key=lambda b: -b[1])


def gpu_filters(req: PlacementRequest, *, rail_up: bool) -> dict[str, object]:
    """$filters of fragment placement_usable: the per-GPU constraints the store prefilters on
    (select.eligible decides exactly)."""
    return {
        "healthy": req.exclude_unhealthy,
        "min_memory_mib": req.min_memory_gib * 1024 if req.min_memory_gib is not None else -1,
        "max_temperature_c": req.max_temperature_c if req.max_temperature_c is not None else NO_LIMIT,
        "max_utilization_pct": BUSY_UTILIZATION_PCT if req.exclusive else NO_LIMIT,
        "max_memory_used_mib": BUSY_MEMORY_MIB if req.exclusive else NO_LIMIT,
        "nic_affinity": req.gpu_nic_affinity,
        "rail_up": rail_up,
        # No per-GPU bound but the host facts Host.impaired_gpus counts against (health, MIG,
        # model, NIC): a host with none impaired has every free GPU usable (placement_leaves_fit).
        "plain": req.min_memory_gib is None and req.max_temperature_c is None and not req.exclusive,
    }


def _candidate(
    req: PlacementRequest, gpus: list[Gpu], hosts: list[Host], blocks: list[tuple[str, int]], now: float
) -> tuple[Candidate, score.Facts, int]:
    """A candidate as ranking needs it (scored, its GPUs in the order found), its facts and the
    free GPUs it leaves on its hosts; `_complete` adds rank order and reason to those answered."""
    taken: dict[str, int] = {}
    for g in gpus:
        taken[g.host] = taken.get(g.host, 0) + 1
        if g.nvlink_domain:
            taken[g.nvlink_domain] = taken.get(g.nvlink_domain, 0) + 1
    unit_free: dict[str, int] = {}
    for h in hosts:
        unit_free[h.name] = len(h.free)
        for g in h.free:
            if g.nvlink_domain:
                unit_free[g.nvlink_domain] = unit_free.get(g.nvlink_domain, 0) + 1
    # A domain spanning hosts (an NVL72 rack) has free GPUs beyond the candidate's hosts: the
    # cluster-wide block list knows them, so its "after" is not understated.
    for unit, free in blocks:
        if unit in taken and unit not in {h.name for h in hosts}:
            unit_free[unit] = max(unit_free.get(unit, 0), free)
    touched_before = sum(unit_free.get(h.name, 0) for h in hosts)
    leftover = sum(unit_free.get(h.name, 0) - taken.get(h.name, 0) for h in hosts)
    before = blocks[0][1] if blocks else max(unit_free.values(), default=0)
    untouched = [free for unit, free in blocks if unit not in taken]
    after_touched = [unit_free.get(u, 0) - n for u, n in taken.items()]
    after = max([*untouched[:1], *after_touched, 0])
    fit = 1.0 - (leftover / touched_before if touched_before else 0.0)
    if req.packing is Packing.SPREAD:
        fit = 1.0 - fit
    bw = bottleneck(gpus)
    temps = [g.temperature_c for g in gpus if g.temperature_c is not None]
    facts = score.Facts(
        fit=fit,
        bottleneck_gbps=bw,
        healthy=sum(1 for g in gpus if (g.health or "ok") == "ok") / len(gpus),
        cool=score.coolness(temps),
        preferred=sum(1 for h in hosts if h.name in req.prefer_hosts) / len(hosts) if req.prefer_hosts else 0.0,
        largest_before=before,
        largest_after=after,
        idle=score.idleness([g.utilization_pct for g in gpus if g.utilization_pct is not None]),
        nvlink_errors=sum(1 for g in gpus if g.nvlink_errors) / len(gpus),
        xid_errors=sum(1 for g in gpus if g.xid_errors) / len(gpus),
        nic_errors=sum(1 for g in gpus if g.nic_errors) / len(gpus) if len(hosts) > 1 else 0.0,
    )
    worst_hops, hops_known = _worst_hops(hosts)
    received = [h.received_at for h in hosts if h.received_at is not None]
    as_of = max(0.0, now - min(received)) if received else 0.0
    candidate = Candidate(
        gpus=list(gpus),
        hosts=sorted(hosts, key=lambda h: h.name),
        score=score.score(facts),
        bottleneck_gbps=bw,
        max_ib_hops=worst_hops,
        rank_order=[],
        largest_free_block_before=before,
        largest_free_block_after=after,
        reason="",
        as_of_s=round(as_of, 3),
        sort_key=score.sort_key(facts, names_model=req.model is not None, cooler_gpus=req.cooler_gpus),
        ib_hops_known=hops_known,
    )
    return candidate, facts, leftover


def _complete(req: PlacementRequest, candidate: Candidate, leftover: int) -> Candidate:
    """The GPUs in collective rank order, and why this candidate (an answered one)."""
    candidate.gpus = rank_order(candidate.gpus)
    candidate.rank_order = [g.uuid for g in candidate.gpus]
    candidate.reason = describe(req, candidate, leftover)
    return candidate
