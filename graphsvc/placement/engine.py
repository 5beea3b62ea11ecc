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

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import cast

from graphsvc.placement import score
from graphsvc.placement.explain import describe, diagnose
from graphsvc.placement.mig_service import place_slices
from graphsvc.placement.model import (
    Candidate,
    DomainFreeRow,
    Gpu,
    GpuRow,
    Host,
    HostFreeRow,
    InfeasibleReason,
    LeafFreeRow,
    LeafHostRow,
    PlacementResult,
    hops,
)
from graphsvc.placement.request import NVLinkRequirement, Packing, PlacementRequest, RequestError
from graphsvc.placement.select import bottleneck, choose_in_host, eligible, rail_up, rank_order
from graphsvc.sites import locality
from graphsvc.sites.store import host_sites
from graphsvc.store.backend import Row
from graphsvc.store.gateway import Gateway

Consume = Callable[[list[Row]], Awaitable[None]]

MAX_HOST_GPUS = 128
MAX_DOMAIN_GPUS = 576
MODELS_TTL_S = 60.0


@dataclass
class SearchBudget:
    units: int = 4000  # units (hosts, domains, leaves) read before giving up
    page: int = 256  # the largest page of units read at once


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
                    host = self.cache[row["host"]] = Host(
                        name=row["host"],
                        rack=row.get("rack"),
                        scalable_unit=row.get("scalable_unit"),
                        leaves=list(row.get("leaves") or []),
                        pod=row.get("pod"),
                        received_at=row.get("received_at"),
                        gpus=[],
                    )
                gpu = Gpu.from_row(host.name, row)
                lapsed = row.get("lease_expires_at")
                if gpu.state == "reserved" and lapsed is not None and lapsed < self.now:
                    gpu.state = "free"
                if gpu.uuid in self.virtual_free:
                    gpu.state = "free"
                if self.stale_before is not None and (host.received_at or self.now) < self.stale_before:
                    # A host silent for longer than stale_after_s may be down: never offer its GPUs.
                    gpu.state = "stale"
                host.gpus.append(gpu)
                by_uuid[gpu.uuid] = gpu
            for name in missing:
                if name in self.cache:
                    self.cache[name].gpus.sort(key=lambda g: g.index)
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
        self._models_cache: tuple[float, list[str]] = (-MODELS_TTL_S, [])

    async def _models(self) -> list[str]:
        """The GPU models in the graph, re-read at most every MODELS_TTL_S (they change with hardware)."""
        now = self.clock()
        read_at, models = self._models_cache
        if now - read_at >= MODELS_TTL_S:
            models = [str(r["model"]) for r in await self.gw.read("placement_gpu_models", {}) if r.get("model")]
            self._models_cache = (now, models)
        return models

    async def _no_such_model(self, req: PlacementRequest) -> list[InfeasibleReason]:
        """A request naming a model the graph has no GPU of: its one reason, before any search
        (which would read every unit only to find nothing). Not in the cached model list: read it
        again (the model may have just arrived)."""
        if req.model_match is None or any(req.model_match.matches(m) for m in await self._models()):
            return []
        self._models_cache = (-MODELS_TTL_S, [])
        return await unknown_model(self.gw, req, await self._models())

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
    ) -> PlacementResult:
        """Ranked candidates; `virtual_free` GPUs (on `extra_hosts`) count as free, for preemption plans.
        `loader`: hosts already read for this request (the diagnosis's searches reuse the first's)."""
        started = time.perf_counter()
        req = req.validated()
        if req.mig_profile is not None:
            return await self._place_slices(req, started)
        unknown = await self._no_such_model(req)
        if unknown:  # answered without a search
            elapsed = (time.perf_counter() - started) * 1000
            return PlacementResult([], unknown if explain_infeasible else [], 0, elapsed)
        search = _Search(self, req, virtual_free)
        if loader is not None and loader.sites == req.site_set and not virtual_free:
            search.loader = loader
        await search.run()
        if req.model is None and not virtual_free:
            await search.search_each_model(await self._models())
        if extra_hosts:
            await search.search_extra(list(extra_hosts))
        candidates = await search.finish()
        if req.cross_site:
            await locality.annotate(self.gw, candidates)  # the inter-site link as the bottleneck
        infeasible = []
        if not candidates and explain_infeasible:
            infeasible = (
                await unknown_model(self.gw, req, await self._models())
                or await unmet_capabilities(self.gw, req)
                or await diagnose(self, req, search.loader if not virtual_free else None)
            )
        return PlacementResult(
            candidates=candidates,
            infeasible=infeasible,
            searched_units=search.units_read,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


class _Search:
    def __init__(self, engine: PlacementEngine, req: PlacementRequest, virtual_free: frozenset[str]) -> None:
        self.engine = engine
        self.req = req
        self.gw = engine.gw
        now = engine.clock()
        stale_before = now - engine.stale_after_s if engine.stale_after_s is not None else None
        self.loader = HostLoader(engine.gw, now, virtual_free, stale_before, req.site_set)
        self.found: dict[frozenset[str], list[Gpu]] = {}
        self.units_read = 0
        # A coarse substring the candidate queries filter on; `eligible` matches exactly.
        self.model = req.model_match.prefilter if req.model_match is not None else ""
        self.exclude = list(req.exclude_hosts)
        # Read a few more than asked, so ranking has something to choose from.
        self.want = req.limit + 2

    def enough(self) -> bool:
        return len(self.found) >= self.want or self.units_read >= self.engine.budget.units

    def add(self, gpus: list[Gpu] | None) -> None:
        if gpus and (self.req.cross_site or not locality.spans_sites(gpus, self.loader.cache)):
            self.found.setdefault(frozenset(g.uuid for g in gpus), gpus)

    async def run(self) -> None:
        req = self.req
        per_host = req.gpus_per_host
        if req.needs_one_domain:
            await self.search_domains()
        elif per_host is None or per_host == req.gpus:
            await self.search_hosts()
        multi_host_allowed = not req.needs_one_domain and (req.max_ib_hops is None or req.max_ib_hops >= 1)
        if not self.enough() and (per_host is None or per_host < req.gpus) and multi_host_allowed:
            await self.search_multi_host()

    async def _pages(self, query: str, params: dict[str, object], consume: Consume) -> None:
        """Read units page by page, each consumed before the next; pages grow from what is wanted."""
        skip = 0
        page = self.want + 2
        while not self.enough():
            rows = await self.gw.read(query, {**params, "skip": skip, "limit": page})
            if not rows:
                return
            skip += len(rows)
            self.units_read += len(rows)
            await consume(rows)
            if len(rows) < page:
                return
            missing = self.want - len(self.found)
            page = min(max(page * 2, 2 * missing + 2), self.engine.budget.page)

    async def _consume_hosts(self, raw: list[Row]) -> None:
        rows = cast(list[HostFreeRow], raw)
        for host in await self.loader.load(r["host"] for r in rows):
            self.add(choose_in_host(host.gpus, self.req.gpus, self.req))

    async def _consume_domains(self, raw: list[Row]) -> None:
        rows = cast(list[DomainFreeRow], raw)
        await self.loader.load(h for r in rows for h in r["hosts"])
        for row in rows:
            hosts = await self.loader.load(row["hosts"])
            self.add(self.choose_in_domain(str(row["domain"]), hosts))

    async def _consume_leaves(self, raw: list[Row]) -> None:
        rows = cast(list[LeafFreeRow], raw)
        found = await self.gw.read("leaf_hosts", {"leaves": [r["leaf"] for r in rows], "exclude": self.exclude})
        members = cast(list[LeafHostRow], found)
        for row in rows:
            group = {m["host"]: m["free"] for m in members if m["leaf"] == row["leaf"]}
            self.add(await self.choose_in_group(group))
            if self.enough():
                return

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
        for model in models:
            sub = _Search(self.engine, self.req.with_(model=model, limit=1), frozenset())
            sub.loader = self.loader  # one read of each host per request
            await sub.run()
            self.units_read += sub.units_read
            for key, gpus in sub.found.items():
                self.found.setdefault(key, gpus)

    async def search_hosts(self) -> None:
        await self._pages(
            "placement_hosts_by_free",
            {**self.sizes(MAX_HOST_GPUS), "exclude": self.exclude, "model": self.model},
            self._consume_hosts,
        )

    async def search_domains(self) -> None:
        # Excluded hosts are dropped by `eligible`, not here: a domain row must not vanish,
        # or the page would look short and end the search early.
        await self._pages(
            "placement_domains_by_free", {**self.sizes(MAX_DOMAIN_GPUS), "model": self.model}, self._consume_domains
        )

    async def search_multi_host(self) -> None:
        req = self.req
        if req.max_ib_hops is None or req.max_ib_hops >= 1:
            await self._pages("placement_leaves_by_free", {"min_free": req.gpus}, self._consume_leaves)
        if self.enough() or (req.max_ib_hops is not None and req.max_ib_hops < 3):
            return
        # Wider groups: one pod (3 hops), or the whole cluster (no limit or no fabric known).
        rows = await self.gw.read(
            "placement_hosts_by_free",
            {"first_size": MAX_HOST_GPUS, "last_size": 1, "step": -1, "exclude": self.exclude, "model": self.model,
             "skip": 0, "limit": self.engine.budget.units},
        )  # fmt: skip
        self.units_read += len(rows)
        hosts = await self.loader.load(str(r["host"]) for r in rows)
        groups: dict[tuple[str | None, str | None], list[Host]] = {}
        for host in hosts:
            key = host.pod if req.max_ib_hops is not None and req.max_ib_hops < 5 else "cluster"
            groups.setdefault((locality.site_key(host, req), key), []).append(host)  # never across sites
        for (_site, key), members in groups.items():
            if key is None:
                continue
            self.add(self.choose_across_hosts(members))

    async def choose_in_group(self, free_by_host: dict[str, int]) -> list[Gpu] | None:
        """Load a group's hosts a few at a time, best fit first, until a placement is found."""
        req = self.req
        per_host = req.gpus_per_host or 1
        spread = req.packing is Packing.SPREAD
        names = sorted(
            (h for h, free in free_by_host.items() if free >= per_host and h not in req.exclude_hosts),
            key=lambda h: (-free_by_host[h] if spread else free_by_host[h], h),
        )
        if req.gpus_per_host is None:
            names.sort(key=lambda h: (-free_by_host[h], h))  # fewest hosts: fullest first
        need = -(-req.gpus // per_host)
        loaded = min(len(names), need + 2)
        while True:
            hosts = await self.loader.load(names[:loaded])
            chosen = self.choose_across_hosts(hosts)
            if chosen is not None or loaded >= len(names):
                return chosen
            loaded = min(len(names), loaded * 2)

    async def search_extra(self, names: list[str]) -> None:
        """Hosts the counters cannot see as free (GPUs a preemption would free): each host,
        each NVLink domain across them, each leaf group across them."""
        req = self.req
        hosts = await self.loader.load(names)
        if not req.needs_one_domain and (req.gpus_per_host in (None, req.gpus)):
            for host in hosts:
                self.add(choose_in_host(host.gpus, req.gpus, req))
        domains: dict[str, list[Host]] = {}
        for host in hosts:
            for dom in {g.nvlink_domain for g in host.gpus if g.nvlink_domain}:
                domains.setdefault(dom, []).append(host)
        for dom, members in domains.items():
            if req.needs_one_domain or req.gpus_per_host is None:
                self.add(self.choose_in_domain(dom, members))
        if not req.needs_one_domain and (req.max_ib_hops is None or req.max_ib_hops >= 1):
            groups: dict[tuple[str | None, str], list[Host]] = {}
            for host in hosts:
                leaf = host.leaves[0] if host.leaves else ""
                groups.setdefault((locality.site_key(host, req), leaf), []).append(host)
            for members in groups.values():
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
            for _host, members in sorted(pools, key=lambda p: len(p[1])):
                if len(members) >= req.gpus:
                    return choose_in_host(members, req.gpus, req)
        chosen = self._fill([(h, m) for h, m in pools], req.gpus)
        if chosen is None or not _hops_ok({g.host for g in chosen}, hosts, req.max_ib_hops):
            return None
        if req.nvlink is NVLinkRequirement.FULL_MESH and not _switched(chosen):
            return None
        return chosen

    def _fill(self, pools: list[tuple[Host, list[Gpu]]], n: int) -> list[Gpu] | None:
        """Fewest hosts: take the fullest first; finish on the host that fits the rest best."""
        chosen: list[Gpu] = []
        remaining = sorted(pools, key=lambda p: (-len(p[1]), p[0].name))
        while remaining and len(chosen) < n:
            need = n - len(chosen)
            fits = [p for p in remaining if len(p[1]) >= need]
            pick = min(fits, key=lambda p: (len(p[1]), p[0].name)) if fits else remaining[0]
            remaining.remove(pick)
            take = sorted(pick[1], key=lambda g: g.index)[: min(need, len(pick[1]))]
            chosen.extend(take)
        return chosen if len(chosen) == n else None

    def choose_across_hosts(self, hosts: list[Host]) -> list[Gpu] | None:
        """A multi-host set inside one group of hosts (one leaf, one pod, or the cluster)."""
        req = self.req
        hosts = [h for h in hosts if h.name not in req.exclude_hosts]
        if req.gpus_per_host is None:
            pools = [(h, [g for g in h.gpus if eligible(g, req) and rail_up(g)]) for h in hosts]
            pools = [p for p in pools if p[1]]
            chosen = self._fill(pools, req.gpus)
        else:
            chosen = self._per_host(hosts)
        if chosen is None:
            return None
        names = {g.host for g in chosen}
        if not _hops_ok(names, hosts, req.max_ib_hops):
            return None
        if req.rail_aligned and not _rail_aligned(chosen):
            return None
        return chosen

    def _per_host(self, hosts: list[Host]) -> list[Gpu] | None:
        req = self.req
        p = req.gpus_per_host or 1
        count = req.gpus // p
        options: list[tuple[Host, list[Gpu]]] = []
        for host in hosts:
            pool = [g for g in host.gpus if eligible(g, req) and rail_up(g)]
            if len(pool) >= p:
                options.append((host, pool))
        if len(options) < count:
            return None
        spread = req.packing is Packing.SPREAD
        options.sort(key=lambda o: (-(len(o[1]) - p) if spread else len(o[1]) - p, o[0].name))
        if req.rail_aligned:
            return self._rail_aligned_pick(options, p, count)
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

    def _rail_aligned_pick(self, options: list[tuple[Host, list[Gpu]]], p: int, count: int) -> list[Gpu] | None:
        """The same rails on every host, each rail's NICs on one leaf."""
        rails_of = [{g.rail: g for g in pool if g.rail is not None and g.via == "pcie-switch"} for _h, pool in options]
        common: set[int] | None = None
        picked: list[int] = []
        for i, rails in enumerate(rails_of):
            trial = set(rails) if common is None else common & set(rails)
            if len(trial) >= p:
                common = trial
                picked.append(i)
                if len(picked) == count:
                    break
        if common is None or len(picked) < count:
            return None
        chosen_rails = sorted(common)[:p]
        chosen = [rails_of[i][r] for i in picked for r in chosen_rails]
        share = [g for g in chosen if g.host == chosen[0].host]
        if self.req.nvlink is not NVLinkRequirement.NONE and choose_in_host(share, p, self.req) is None:
            return None
        return chosen

    async def finish(self) -> list[Candidate]:
        if not self.found:
            return []
        blocks = await largest_free_blocks(self.gw, len(self.found) + 2)
        now = self.engine.clock()
        ranked = sorted(
            [
                _candidate(self.req, gpus, await self.loader.load({g.host for g in gpus}), blocks, now)
                for gpus in self.found.values()
            ],
            key=lambda pair: pair[0].sort_key,
            reverse=True,
        )
        top, top_facts = ranked[0]
        top.reason += score.choice_note(top_facts, [f for _, f in ranked[1:]], names_model=self.req.model is not None)
        return [c for c, _ in ranked[: self.req.limit]]


def _switched(gpus: list[Gpu]) -> bool:
    return len({g.nvlink_domain for g in gpus}) == 1 and gpus[0].domain_kind == "fabric-clique"


def _hops_ok(names: set[str], hosts: list[Host], limit: int | None) -> bool:
    if len(names) <= 1:
        return True
    chosen = [h for h in hosts if h.name in names]
    worst = _max_hops(chosen)
    if limit is None:
        return True
    return worst is not None and worst <= limit


def _max_hops(hosts: list[Host]) -> int | None:
    worst = 0
    for i, a in enumerate(hosts):
        for b in hosts[i + 1 :]:
            h = hops(a, b)
            if h is None:
                return None
            worst = max(worst, h)
    return worst


def _rail_aligned(gpus: list[Gpu]) -> bool:
    by_host: dict[str, set[tuple[int | None, str | None]]] = {}
    for g in gpus:
        if g.rail is None or g.leaf is None:
            return False
        by_host.setdefault(g.host, set()).add((g.rail, g.leaf))
    return len({frozenset(v) for v in by_host.values()}) == 1


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
    blocks = [(str(r["unit"]), int(r["free"])) for r in host_rows + domain_rows]
    return sorted(blocks, key=lambda b: -b[1])


def _candidate(
    req: PlacementRequest, gpus: list[Gpu], hosts: list[Host], blocks: list[tuple[str, int]], now: float
) -> tuple[Candidate, score.Facts]:
    ordered = rank_order(gpus)
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
    )
    worst_hops = _max_hops(hosts) or 0
    received = [h.received_at for h in hosts if h.received_at is not None]
    as_of = max(0.0, now - min(received)) if received else 0.0
    candidate = Candidate(
        gpus=ordered,
        hosts=sorted(hosts, key=lambda h: h.name),
        score=score.score(facts),
        bottleneck_gbps=bw,
        max_ib_hops=worst_hops,
        rank_order=[g.uuid for g in ordered],
        largest_free_block_before=before,
        largest_free_block_after=after,
        reason="",
        as_of_s=round(as_of, 3),
        sort_key=score.sort_key(facts, names_model=req.model is not None, cooler_gpus=req.cooler_gpus),
    )
    candidate.reason = describe(req, candidate, leftover)
    return candidate, facts
