"""The sites application service: what the API and the CLI call (they never touch the store).

compare_sites places the request in each site on its own (a placement never spans sites
here), reads the facts once, and hands plain data to the pure estimates and ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import PlacementResult
from graphsvc.placement.request import PlacementRequest, RequestError, format_request
from graphsvc.sites.book import FactBook
from graphsvc.sites.catalog import PriceCatalog, SiteCatalog
from graphsvc.sites.compare import Objective, PlacementView, SiteOption, best_for_site, evaluate, rank, sort_key
from graphsvc.sites.estimate import JobProfile
from graphsvc.sites.limits import MAX_WAIT_STEPS as MAX_WAIT_STEPS  # read here by callers and tests
from graphsvc.sites.limits import WAIT_SEARCHES as WAIT_SEARCHES
from graphsvc.sites.model import Fact, Site, SiteLink
from graphsvc.sites.store import (
    FactsWritten,
    FreeGPUs,
    fact_book,
    list_sites,
    measured_power,
    put_facts,
    put_sites,
    reserved_gpus,
    site_capacity,
    site_free_gpus,
    site_links,
)
from graphsvc.sites.wait import first_fit, needed, share
from graphsvc.store.gateway import Gateway

DEFAULT_MAX_AGE_DAYS = 365.0
# queries/site_free_excluded reads the free GPUs of a site's hosts with an impaired GPU (every
# host of a PCIe site: no NIC affinity via a PCIe switch): on a loaded 2-core machine, embedded
# FalkorDB, 6-19 ms for 4,096 such GPUs and 1-4 ms for 1,016 GPUs on 127 HGX hosts, 10 of them
# impaired, beside 2-8 ms for an infeasible 9-GPU search (priced 4 units,
# graphsvc.api.graphql.cost.search_cost). So the read is counted as one search per this many GPUs
# of the site, the least a search is priced at.
EXCLUDED_READ_GPUS = 1024


@dataclass
class Comparison:
    request: str
    objective: Objective
    deadline_h: float | None
    options: list[SiteOption]

    @property
    def choice(self) -> SiteOption | None:
        if self.options and sort_key(self.options[0], self.objective)[0] == 1:
            return self.options[0]
        return None


async def compare_sites(
    engine: PlacementEngine,
    req: PlacementRequest,
    profile: JobProfile,
    objective: Objective,
    *,
    deadline_h: float | None = None,
    max_age_days: float = DEFAULT_MAX_AGE_DAYS,
    only: tuple[str, ...] = (),
    wait_searches: int | None = None,
) -> Comparison:
    """Per site: its best placement now and every estimate; ranked by the objective.

    `wait_searches`: the searches, over all the sites too full for the job now, that their
    predicted waits may take (the query's price paid for them: graphsvc.api.graphql.cost.charge);
    None: each site the bisection's full WAIT_SEARCHES. A site given fewer says so (wait_coarse).

    Raises RequestError (naming the field) for a request or profile that cannot be answered.
    """
    req = req.validated()
    for name, message in profile.problems():
        raise RequestError(name, message)
    if objective is Objective.CHEAPEST_UNDER_DEADLINE and deadline_h is None:
        raise RequestError("deadlineHours", "cheapest-under-deadline needs a deadline")
    if deadline_h is not None and not deadline_h > 0:
        raise RequestError("deadlineHours", "must be above 0")
    if not max_age_days > 0:
        raise RequestError("maxFactAgeDays", "must be above 0")
    gw = engine.gw
    sites = await list_sites(gw)
    names = {s.name for s in sites}
    if not sites:
        raise RequestError("sites", "no site is defined: PUT /v1/sites first (docs/sites.md)")
    if profile.data_site and profile.dataset_gb > 0 and profile.data_site not in names:
        raise RequestError("dataSite", f"unknown site {profile.data_site!r}; sites: {', '.join(sorted(names))}")
    unknown = [s for s in only if s not in names]
    if unknown:
        raise RequestError("sites", f"unknown site {unknown[0]!r}; sites: {', '.join(sorted(names))}")
    if only:
        sites = [s for s in sites if s.name in only]
    links = await site_links(gw)
    book = await fact_book(gw)
    now = engine.clock()
    free: dict[str, int] = {}
    size: dict[str, int] = {}
    for cap in await site_capacity(gw):
        free[cap.site] = free.get(cap.site, 0) + cap.free
        size[cap.site] = size.get(cap.site, 0) + cap.gpus
    # Every site's search now first: the wait searches the price paid for are then shared among
    # the sites too full for the job now (with every search paid for, each gets what it needs).
    in_sites = [req.with_(sites=(site.name,), cross_site=False, limit=1) for site in sites]
    nows = [await engine.place(in_site, explain_infeasible=False) for in_site in in_sites]
    full = [i for i, result in enumerate(nows) if not result.candidates]
    leases = {i: await _leases(engine.gw, sites[i].name) for i in full}
    shares = dict(zip(full, share(wait_searches, [needed(len(leases[i][1])) for i in full]), strict=True))
    waits = [
        await _after_wait(engine, in_sites[i], now, *leases[i], shares[i]) if i in leases else Wait(nows[i])
        for i in range(len(sites))
    ]
    # The wait searches paid for and not run pay for the reads that say, for a site that cannot
    # place the job, how many of its free GPUs the placement excludes (excluded_free), each read
    # counted as one search per EXCLUDED_READ_GPUS GPUs of the site.
    spare = (len(sites) * WAIT_SEARCHES if wait_searches is None else wait_searches) - sum(w.searches for w in waits)
    options = []
    for i, site in enumerate(sites):
        wait, count = waits[i], free.get(site.name, 0)
        price = max(1, -(-size.get(site.name, 0) // EXCLUDED_READ_GPUS))
        explain = spare >= price and not wait.result.candidates and wait.coarse is None and count > 0
        spare -= price if explain else 0
        option = await _site_option(
            engine, site, req, profile, objective, book, links, now, max_age_days, deadline_h, count, wait, explain,
        )  # fmt: skip
        option.wait_coarse, option.wait_reason = wait.coarse is not None, wait.coarse
        options.append(option)
    return Comparison(format_request(req), objective, deadline_h, rank(options, objective, deadline_h))


@dataclass(frozen=True)
class Wait:
    """A site's placement now or after its predicted wait, and how exact that wait is."""

    result: PlacementResult
    hours: float = 0.0
    from_hours: float = 0.0  # the full search's wait is at least this (== hours when exact)
    coarse: str | None = None  # why the wait is coarser than the full search's, or None
    searches: int = 0  # the wait searches it took


async def _site_option(
    engine: PlacementEngine,
    site: Site,
    req: PlacementRequest,
    profile: JobProfile,
    objective: Objective,
    book: FactBook,
    links: list[SiteLink],
    now: float,
    max_age_days: float,
    deadline_h: float | None,
    free: int,
    wait: Wait,
    explain: bool = False,
) -> SiteOption:
    """The site's option; `explain`: a site that cannot place the job may read its free GPUs to
    say how many of them the placement excludes (compare_sites decides, within the price)."""
    result = wait.result
    if not result.candidates:
        if wait.coarse is not None:
            why = f"no placement of {req.gpus} GPUs here now; as leases run out: not searched ({wait.coarse})"
        else:
            counted = f"{free} GPUs free"
            if explain and req.mig_profile is None:
                excluded, parts = excluded_free(req, await site_free_gpus(engine.gw, site.name))
                if excluded:
                    counted += f", {excluded} of them excluded: {'; '.join(parts)}"
            why = f"no placement of {req.gpus} GPUs here, now or as leases run out ({counted})"
        return SiteOption(site=site.name, capacity=None, fits=False, reason=why)
    cand = result.candidates[0]
    model = cand.gpus[0].model
    measured = (await measured_power(engine.gw, [model])).get(model)
    view = PlacementView(
        gpus=len(cand.gpus),
        model=model,
        bottleneck_gbps=cand.bottleneck_gbps,
        hosts=tuple(h.name for h in cand.hosts),
        measured_power_w=measured[0] if measured else None,
        measured_gpus=measured[1] if measured else 0,
        wait_hours=wait.hours,
        wait_from_hours=wait.from_hours,
    )
    if not site.capacity_kinds:
        return SiteOption(
            site=site.name,
            capacity=None,
            fits=True,
            placement=view,
            missing=[f"capacity kinds of site {site.name}"],
            reason="the site names no capacity kind (owned, reserved, on-demand, spot)",
        )
    per_kind = [
        evaluate(site, kind, view, profile, book, links, now=now, max_age_days=max_age_days, deadline_h=deadline_h)
        for kind in site.capacity_kinds
    ]
    return best_for_site(per_kind, objective)


def excluded_free(req: PlacementRequest, kinds: list[FreeGPUs]) -> tuple[int, list[str]]:
    """How many of a site's free GPUs (`kinds`) the request's placement excludes whatever the free
    counters say, and why, one phrase a reason: another model than the one asked for, MIG mode (a
    whole-GPU request never takes a GPU in MIG mode), degraded health (while excludeUnhealthy, the
    default). Each GPU is counted once, under the first of these that holds. compareSites adds
    them to the reason it gives a site that cannot place the job: a site with 8 free GPUs, one of
    them degraded, said only "(8 GPUs free)" to an 8-GPU request."""
    match = req.model_match
    other = mig = degraded = 0
    for kind in kinds:
        if match is not None and (kind.model is None or not match.matches(kind.model)):
            other += kind.gpus
        elif kind.mig:
            mig += kind.gpus
        elif kind.degraded and req.exclude_unhealthy:
            degraded += kind.gpus
    parts = []
    if degraded:
        parts.append(f"{degraded} degraded, refused while excludeUnhealthy is true")
    if mig:
        parts.append(f"{mig} in MIG mode")
    if other:
        parts.append(f"{other} of another model than {req.model}")
    return other + mig + degraded, parts


Held = list[tuple[str, str, float]]  # (GPU uuid, host, lease expiry) of a site's reserved GPUs


async def _leases(gw: Gateway, site: str) -> tuple[Held, list[float]]:
    """The site's reserved GPUs and the expiry times its wait search chooses among: at most
    MAX_WAIT_STEPS, evenly spread, the last always among them."""
    held = await reserved_gpus(gw, site)
    times = sorted({t for _u, _h, t in held})
    if not times:
        return held, []
    step = max(1, -(-len(times) // MAX_WAIT_STEPS))
    probes = [*times[step - 1 :: step]]
    if probes[-1] != times[-1]:
        probes.append(times[-1])
    return held, probes


async def _after_wait(
    engine: PlacementEngine, req: PlacementRequest, now: float, held: Held, probes: list[float], allowance: int | None
) -> Wait:
    """The placement once enough leases have run out, and the hours until then.

    Reserved GPUs are released in lease-expiry order; the first expiry after which the job
    fits is the predicted wait (a lower bound: a lease that is renewed ends later). At most
    MAX_WAIT_STEPS expiry times are candidates, evenly spread, and the first that fits is found
    by bisection, in at most WAIT_SEARCHES searches: the GPUs freed by an expiry are freed at
    every later one too, so a job that fits at one expiry fits at every later one, and the
    bisection finds the expiry the scan in order found (which tried up to 12). With fewer
    searches than it needs (`allowance`: what the query's cost limit paid for) the wait is the
    first expiry tested after which the job fits: an upper bound, said so (graphsvc.sites.wait).
    """

    async def attempt(i: int) -> PlacementResult | None:
        freed = [(u, h) for u, h, when in held if when <= probes[i]]
        result = await engine.place(
            req,
            explain_infeasible=False,
            virtual_free=frozenset(u for u, _h in freed),
            extra_hosts=tuple(sorted({h for _u, h in freed})),
        )
        return result if result.candidates else None

    def hours(i: int) -> float:
        return max(0.0, (probes[i] - now) / 3600.0)

    fit = await first_fit(len(probes), allowance, attempt)
    coarse = None
    if not fit.exact:
        coarse = (
            f"the query's cost limit paid for {fit.searches} of the {needed(len(probes))} wait searches "
            f"over {len(probes)} lease expiry times"
        )
        if fit.index is not None:
            coarse += (
                f": waitHours is the first expiry tested after which the job fits, an upper bound; "
                f"the full search's wait is between {hours(fit.low):.2f} h and {hours(fit.index):.2f} h"
            )
    if fit.result is None or fit.index is None:
        return Wait(PlacementResult([], [], 0, 0.0), coarse=coarse, searches=fit.searches)
    return Wait(fit.result, hours(fit.index), hours(fit.low), coarse, fit.searches)


async def replace_sites(gw: Gateway, catalog: SiteCatalog, now: float) -> int:
    return await put_sites(gw, catalog, now)


async def load_prices(gw: Gateway, catalog: PriceCatalog, now: float) -> FactsWritten:
    return await put_facts(gw, catalog.all_facts(), now)


async def set_fact(gw: Gateway, fact: Fact, now: float) -> FactsWritten:
    return await put_facts(gw, [fact], now)


async def facts(gw: Gateway) -> list[Fact]:
    return (await fact_book(gw)).facts


async def sites_overview(gw: Gateway) -> tuple[list[Site], dict[str, list[tuple[str, int, int]]]]:
    """Sites, and per site its GPUs by model: (model, gpus, free)."""
    counts: dict[str, list[tuple[str, int, int]]] = {}
    for cap in await site_capacity(gw):
        counts.setdefault(cap.site, []).append((cap.model, cap.gpus, cap.free))
    return await list_sites(gw), counts
