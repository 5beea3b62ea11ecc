"""What a GraphQL operation costs, before it runs: a pure function over the parsed document.

Depth, alias and token limits bound the size of a document, not the work it asks for: 15
aliases of `placement(gpus: 4096)` passed them all and took 7 s. Each root field has a
weight in rough units of store work (about a millisecond); aliases repeat a field, so they
add up; every field that runs a placement search grows with the GPUs it searches for, read as
its resolver reads them (a request text by the request parser itself, compareSites once per
site), except a shaped job, which reads the whole cluster whatever its size and is priced as the
largest search; pages grow with the page size, a search with its text. A field whose work
depends on what the store holds (a job's size for replaceFailed, the cluster for impact) is
priced by what it measured, or as the largest where the price cannot know (impact, nextPhase,
replaceFailed, search and gpuGrid cost 1 each before; sites, siteLinks, costFacts, elasticState,
removeHost and leafHosts until stop 65). A page is priced as the resolver reads it: `first` above
its cap (graphsvc.paging.MAX_PAGE) is served as the cap, never refused, so it costs the cap.
Nested fields are free: a root field's resolver fetches what it returns in its own queries.
docs/deploy.md (Limits) has the table. The root fields are found by the walk the limits and the
latency label share (walk.py). The one price that needs the store, how many sites the catalogue
holds (for a compareSites naming none, and for sites and siteLinks, which read the whole
catalogue), is read at most every SITE_COUNT_TTL_S (SiteServices.count), never once per request.

The schema extension `QueryCostLimit` refuses an operation costing more than
`graphql_max_cost` and charges the rest to a per-token budget (a token bucket), so one
token cannot keep the service busy with affordable queries either. A compareSites over the limit
is not refused while its searches now fit: it runs with the wait searches the limit pays for
(charge), and says where its wait is coarser for it.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLError,
    OperationDefinitionNode,
    ValueNode,
)
from graphql.utilities import value_from_ast_untyped
from strawberry.extensions import SchemaExtension
from topo_facts.models import MAX_TEXT_LENGTH

from graphsvc.api.graphql.context import QueryBudgetExceeded, QueryTooExpensive
from graphsvc.api.graphql.walk import UnknownFragment, fragments_of, root_fields
from graphsvc.paging import MAX_PAGE
from graphsvc.placement.request import MAX_GPUS, parse_request
from graphsvc.placement.shape import MAX_RANKS, parse_shape
from graphsvc.sites.limits import COMPARE_SEARCHES as COMPARE_SEARCHES  # read by callers and tests
from graphsvc.sites.limits import WAIT_SEARCHES

PER_GPU = 1 / 8  # a placement's work grows with the GPUs it must find: one unit per 8 GPUs
PLACEMENT_BASE = 2  # also the price of a request refused before any search (a malformed text, > 4,096 GPUs)
PAGE_UNIT = 100  # one unit per 100 rows of a page
# compareSites without `sites` searches every site of the catalogue: it is priced by the number of
# sites the store holds, read at most every SITE_COUNT_TTL_S per process (never once per request),
# and as the catalogue's largest (graphsvc.sites.catalog.SiteCatalog: at most 1,000 sites) where
# that count is not known. It was priced as 3 sites (the multi-site demo's), however many there were.
MAX_SITES = 1000
SITE_COUNT_TTL_S = 30.0
# compareSites runs, per site compared, one search now and, for a site too full to place the job now,
# up to WAIT_SEARCHES more as its leases run out (graphsvc.sites.service._after_wait: a bisection
# over at most 12 expiry times). It tried them in order, up to 13 searches a full site, priced as 1.
# COMPARE_SEARCHES = 1 + WAIT_SEARCHES (graphsvc.sites.limits, which the comparison reads too) is its
# price at full precision; over the limit it is cut to what the limit pays for (charge, below).
# The fields below were priced 1 whatever they read (until stop 65); each is priced by its store time
# (the gateway's, in ms) at the most it can read, about a millisecond a unit, as clusterSummary (5:
# 7-14 ms) and host (1: 1.4-1.9 ms) took in the same runs (embedded FalkorDB, 4,096 GPUs).
# The site catalogue's reads grow with it: `sites` with the sites the catalogue holds (each with its
# clusters' GPU counts, an aggregate over their hosts: 3 sites 1.6-1.8 ms, 1,000 sites 14-46 ms),
# `siteLinks` with the links they can have (one per pair, at most MAX_LINKS, the catalogue's
# largest: 10,000 took 41-218 ms); one unit per CATALOGUE_ROWS rows, the sites counted as for
# compareSites.
CATALOGUE_ROWS = 50
MAX_LINKS = 10_000
# costFacts reads every fact the store holds, a number the price cannot know (each price file holds at
# most 10,000; several files add up): priced as one full file, 10,018 facts: 280-320 ms (0.42-0.62 s
# a request); 18 facts took 0.5 ms.
COST_FACTS = 300
# search: its three store reads, then the ranking, which compares the text with each of up to ~700
# names the reads found (difflib, ~0.2 ms a name at 256 characters: graphsvc.read.explorer.search):
# one unit per SEARCH_CHARS characters. 8 characters took ~16-20 ms, 64 ~0.1 s, 256 ~0.5-0.7 s on
# 4,096 GPUs, where placement(gpus: 1024), 130, took 0.23-0.51 s.
SEARCH_BASE = 3
SEARCH_CHARS = 2
# gpuGrid: a page of plain rows, at most GRID_PAGE (graphsvc.read.explorer.GRID_PAGE), priced as the
# other pages, one unit per 100 rows (a page of 5,000 took 0.2-0.4 s on 4,096 GPUs): 51 at most.
GRID_PAGE = 5000
# impact: reads every live reservation's GPUs, every host and every switch, whatever it is asked
# about, and works out the blast radius in Python: 0.14-0.55 s on 4,096 GPUs with 2,048 held, as
# long as placement(gpus: 1024) took beside it; priced as that search. It grows with the cluster.
IMPACT = PLACEMENT_BASE + 1024 // 8
# nextPhase: reads the reservation and its hosts, up to 512 neighbour hosts (resize.pool), and plans
# the growth over the whole job; replaceFailed plans a layout-keeping replacement over the whole job
# and its neighbourhood, twice when it applies (propose, then replace). Both grow with the job (up to
# 4,096 GPUs), whose size is stored, unknown to the price: on 4,096 GPUs nextPhase took 0.04-0.09 s
# for an 8-GPU job and 1.6-2.3 s for a 1,024-GPU one (whatever the next size), replaceFailed 0.7-0.9 s
# (a 512-GPU job) and 1.3-1.7 s (1,024), where placement(gpus: 1024), 130, took 0.45-1.1 s. Priced
# as the largest search, like shapedPlacement: one fits in an operation, two do not.
NEXT_PHASE = PLACEMENT_BASE + MAX_GPUS // 8
REPLACE_FAILED = PLACEMENT_BASE + MAX_GPUS // 8
# reservation and elasticState read the reservation with every GPU it holds, ranked
# (reservation_get): the read grows with the job, up to 4,096 GPUs, a size the price cannot know. An
# 8-GPU job took 0.8-1.7 ms, a 4,096-GPU one 57-71 ms (on 8,192 GPUs; 69-207 ms in a busier run):
# priced as the largest. `reservation` cost 1 until stop 70, so fifteen aliases of one 4,096-GPU
# job's read (~1 s of store work) cost 15, and the REST read (GET /v1/reservations/{id}) nothing.
RESERVATION_READ = 70
# renew and release answer the same reservation, but from their own write (no read after it: the
# statement returns what it wrote) and stay at 1: each is one mutation, counted by the mutation
# limit (2,000/s a token), and a read's price on them would take the cost budget (6,000 units/s a
# token) down to ~85 releases/s, where one scheduler's reserve+release is meant to run 1,000 jobs/s.
# removeHost: one write that deletes the host with its devices and recounts every counter it fed (its
# NVLink domains, its switches' free GPUs): an 8-GPU host took 13-14 ms (an NVL72 tray, recounting its
# 72-GPU domain, 13-20 ms; a name no host has 2.4 ms).
REMOVE_HOST = 14
# leafHosts: the hosts cabled to one switch, a row a host: a rail leaf's 32 hosts took 1.0-1.3 ms, a
# switch cabling all 512 hosts of the cluster 2.5-2.9 ms.
LEAF_HOSTS = 3

FIXED = {
    "clusterSummary": 5,  # aggregates over every GPU
    "leafLoad": 5,  # aggregates over every GPU of a cluster, by its nearest NIC's leaf
    "drift": 20,  # renders a whole cluster's export and compares it
    "fabricPath": 5,
    "host": 1,
    "reservation": RESERVATION_READ,
    "renew": 1,
    "release": 1,
    "events": 1,
    "__typename": 0,
    "__schema": 10,
    "__type": 1,
    "impact": IMPACT,
    "nextPhase": NEXT_PHASE,
    "replaceFailed": REPLACE_FAILED,
    "costFacts": COST_FACTS,
    "elasticState": RESERVATION_READ,
    "removeHost": REMOVE_HOST,
    "leafHosts": LEAF_HOSTS,
}
PAGED = {"hosts": 100, "gpus": 100, "reservations": 100, "fabric": 200}  # field -> default `first`
# Each serves at most MAX_PAGE rows whatever `first` asks (graphsvc.paging.page_size; reservations:
# ReservationService.page), so `first: 100000` is priced as the 500 rows it reads: it was priced
# 1,001 and refused, for rows it would never read.
# Fields that run one placement search for `request.gpus` GPUs (reserve: or hold the GPUs named;
# preempt: reserves, and plans the preemption only when nothing is free).
PLACEMENT_LIKE = {"placement", "preemptionPlan", "reserve", "sitePlacement", "preempt"}


class CostUnknown(ValueError):
    """The document's cost cannot be computed: it is refused, never priced 0 (a walk that stopped
    at 21 nested fragments priced fifteen 4,096-GPU placements at 0, and they ran)."""


def field_cost(name: str, args: Mapping[str, Any], sites: int = MAX_SITES) -> int:
    """The cost of one root field with its (variable-resolved) arguments; `sites`: how many sites
    the catalogue holds, for a compareSites that names none, sites and siteLinks (the largest
    catalogue if unknown)."""
    if name in FIXED:
        return FIXED[name]
    if name in PAGED:
        first = min(_int(args.get("first"), PAGED[name]), MAX_PAGE)
        return 1 + math.ceil(max(first, 0) / PAGE_UNIT)
    if name == "sites":
        return 1 + math.ceil(max(sites, 0) / CATALOGUE_ROWS)
    if name == "siteLinks":
        pairs = max(sites, 0) * (max(sites, 0) - 1) // 2
        return 1 + math.ceil(min(MAX_LINKS, pairs) / CATALOGUE_ROWS)
    if name == "gpuGrid":
        first = min(_int(args.get("first"), GRID_PAGE), GRID_PAGE)  # the resolver serves at most GRID_PAGE
        return 1 + math.ceil(max(first, 0) / PAGE_UNIT)
    if name == "search":
        return _search_cost(args.get("text"))
    if name in PLACEMENT_LIKE:
        return search_cost(_request_gpus(name, args))
    if name == "placementText":
        return search_cost(text_gpus(args.get("text")))
    if name == "shapedPlacement":
        # Whatever its size, a shaped job reads every host with a free GPU of its model (up to
        # 20,000: shaped_service.place_shaped) and carves groups in Python: the work of the largest
        # placement, or more (tp=8 dp=8 took as long as tp=8 dp=512 on 4,096 GPUs, ~5 s on a
        # 2-core machine, where placement(gpus: 64) took ~0.15 s). Priced as a 4,096-GPU search:
        # one fits in an operation, two do not.
        return search_cost(None if _shaped_gpus(args) is None else MAX_RANKS)
    if name == "compareSites":
        return _compare_sites_cost(args, sites)
    if name == "resize":
        # Growing searches the reservation's neighbourhood for up to `gpus` GPUs (the new size);
        # removing the GPUs or ranks named searches nothing.
        gpus = args.get("gpus")
        return 1 if gpus is None else search_cost(_int(gpus, 1))
    return 1


def search_cost(gpus: int | None) -> int:
    """One placement search for `gpus` GPUs. None, or more GPUs than any request may ask for, is
    refused before any search: it costs the base, so the caller hears the request's own error
    ("gpus: must be between 1 and 4096") as REST and `graphsvc reserve` say it, not a cost it
    could never bring under the limit."""
    if gpus is None or gpus > MAX_GPUS:
        return PLACEMENT_BASE
    return PLACEMENT_BASE + math.ceil(max(gpus, 0) * PER_GPU)


def text_gpus(text: Any) -> int | None:
    """The GPUs a request text asks for, as the placement itself reads it (parse_request), so the
    price and the search can never disagree: a regex read `'4096'xH100`, `"4096xH100"` or a count
    after U+3000 as 1 GPU, and the parser as 4096. None for a text the parser refuses: it is
    answered with its error, unsearched."""
    if not isinstance(text, str):
        return None
    try:
        return parse_request(text).gpus
    except ValueError:  # RequestError, and anything else the parser refuses
        return None


def _request_gpus(name: str, args: Mapping[str, Any]) -> int:
    if name in ("reserve", "preempt"):
        data = args.get("input") if isinstance(args.get("input"), Mapping) else {}
        assert isinstance(data, Mapping)
        if name == "reserve" and isinstance(data.get("gpus"), list):
            return len(data["gpus"])
        request = data.get("request")
    else:
        request = args.get("request")
    return _structured_gpus(request)


def _structured_gpus(request: Any) -> int:
    """`gpus` of a PlacementRequestInput (1 where it cannot be read: GraphQL refuses it anyway)."""
    return _int(request.get("gpus"), 1) if isinstance(request, Mapping) else 1


def _shaped_gpus(args: Mapping[str, Any]) -> int | None:
    """tp * pp * dp, the GPUs a shaped job asks for; None where it is refused unsearched (a text or
    shape that does not parse, more than 4,096 ranks, both forms or neither)."""
    text, given = args.get("text"), args.get("shape")
    if (text is None) == (given is None):
        return None  # "give the job either as text or as shape"
    if text is not None:
        try:
            return parse_shape(text).ranks if isinstance(text, str) else None
        except ValueError:
            return None
    if not isinstance(given, Mapping):
        return None
    tp, pp, dp = (_int(given.get(k), 1) for k in ("tp", "pp", "dp"))
    if min(tp, pp, dp) < 1 or tp * pp * dp > MAX_RANKS:
        return None
    return tp * pp * dp


def _search_cost(text: Any) -> int:
    """Three reads and a ranking that grows with the text (SEARCH_CHARS); a text over
    MAX_TEXT_LENGTH is refused before any read."""
    if not isinstance(text, str) or len(text) > MAX_TEXT_LENGTH:
        return 1
    return SEARCH_BASE + math.ceil(len(text) / SEARCH_CHARS)


def _compare_sites_cost(args: Mapping[str, Any], sites: int) -> int:
    """COMPARE_SEARCHES placement searches per site compared (graphsvc.sites.service.compare_sites:
    one now, the rest for a site too full now): those named, else every site of the catalogue
    (`sites` of them; none: refused before any search)."""
    parts = _compare_searches(args, sites)
    if parts is None:
        return PLACEMENT_BASE
    count, each = parts
    return count * COMPARE_SEARCHES * each


def _compare_searches(args: Mapping[str, Any], sites: int) -> tuple[int, int] | None:
    """The sites a compareSites compares and the price of one of its searches; None where it is
    answered before any search (priced PLACEMENT_BASE)."""
    request, text = args.get("request"), args.get("text")
    if (request is None) == (text is None):
        return None  # "give either request or text": answered unsearched
    gpus = text_gpus(text) if text is not None else _structured_gpus(request)
    if gpus is None or gpus > MAX_GPUS:
        return None  # the request is validated before any site is searched
    named = args.get("sites")
    if isinstance(named, str):  # a single value where a list is expected is a list of one
        count = 1
    elif isinstance(named, list) and named:
        count = len({str(s) for s in named})
    else:
        count = sites
    if count < 1:
        return None  # no site is defined: refused before any search
    return count, search_cost(gpus)


def _priced_by_sites(name: str, args: Mapping[str, Any]) -> bool:
    """A field priced by the sites the catalogue holds: a compareSites naming no site (it compares
    every one), sites and siteLinks (they read the whole catalogue)."""
    return (name == "compareSites" and not args.get("sites")) or name in ("sites", "siteLinks")


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return int(min(value, 10**9))


def operation_cost(
    document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None, sites: int = MAX_SITES
) -> int:
    """The summed cost of the root fields the named (or only) operation selects; `sites` as for
    field_cost.

    Raises CostUnknown for a document whose root fields cannot all be found."""
    return _total(priced_fields(document, operation_name, variables), sites)


Priced = list[list[tuple[str, dict[str, Any]]]]  # per response key: each field's name and arguments


def priced_fields(document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None) -> Priced:
    """The root fields the named (or only) operation runs (walk.root_fields), with their arguments
    as they run: variables resolved, a variable not sent at its default.

    Raises CostUnknown for a document whose root fields cannot all be found."""
    return list(keyed_fields(document, operation_name, variables).values())


def keyed_fields(
    document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None
) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """priced_fields by response key (the key a resolver reads as info.path.key)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [op for op in operations if operation_name is None or (op.name and op.name.value == operation_name)]
    if not chosen:
        return {}
    values = _with_defaults(chosen[0], variables or {})
    try:
        fields = root_fields(chosen[0].selection_set, fragments_of(document))
    except UnknownFragment as err:
        raise CostUnknown(str(err)) from None
    return {key: [(f.name.value, _args(f, values)) for f in same_key] for key, same_key in fields.items()}


def _total(priced: Priced, sites: int) -> int:
    """Each response key at its dearest field (it runs once)."""
    return sum(max(field_cost(name, args, sites) for name, args in same_key) for same_key in priced)


@dataclass(frozen=True)
class Charge:
    """What an operation runs at under the limit. `full`: its price with every compareSites at
    its full wait search (operation_cost); `cost`: what it is charged and may run, `full` or,
    where that is over the limit, each compareSites cut to the wait searches the rest of the limit
    pays for (`wait_searches`, by response key: the searches all its full sites' waits may take,
    graphsvc.sites.service.compare_sites); `refused`: even its searches now do not fit."""

    cost: int
    full: int
    refused: bool = False
    wait_searches: dict[str, int] = field(default_factory=dict)


def charge(keyed: Mapping[str, list[tuple[str, dict[str, Any]]]], sites: int, limit: int) -> Charge:
    """The operation's charge under `limit` (keyed: its root fields by response key, as
    keyed_fields gives them; `sites` as for field_cost).

    A compareSites whose full price (COMPARE_SEARCHES a site) is over the limit was refused: 3
    sites could not compare a job above 512 GPUs, one site above 1,584. Its searches now (one a
    site) are what it must run; its wait searches, for the sites too full for the job now, are
    what the limit has left for, in the order of the response keys, each at most its full
    WAIT_SEARCHES a site. Decided here, before any search: refused, or run with no more
    searches than it is charged for (the resolver reads its share: wait_searches_for)."""
    full = _total(list(keyed.values()), sites)
    if full <= limit:
        return Charge(full, full)
    fixed = 0
    cut: list[tuple[str, int, int]] = []  # response key, sites compared, the price of one search
    for key, same_key in keyed.items():
        parts = {_compare_searches(args, sites) if name == "compareSites" else None for name, args in same_key}
        only = next(iter(parts)) if len(parts) == 1 else None
        if only is None:
            fixed += max(field_cost(name, args, sites) for name, args in same_key)
        else:
            count, each = only
            fixed += count * each
            cut.append((key, count, each))
    if fixed > limit or not cut:
        return Charge(full, full, refused=True)
    left = limit - fixed
    waits: dict[str, int] = {}
    for key, count, each in cut:
        waits[key] = min(count * WAIT_SEARCHES, left // each)
        left -= waits[key] * each
    return Charge(limit - left, full, wait_searches=waits)


# The context attribute the cost limit leaves a cut compareSites' wait searches in, by response key.
WAIT_SEARCHES_ATTR = "compare_wait_searches"


def wait_searches_for(context: object, key: str) -> int | None:
    """The wait searches the compareSites answering `key` may run, None: its full WAIT_SEARCHES a
    site (its price was not cut, or no cost limit ran)."""
    waits = getattr(context, WAIT_SEARCHES_ATTR, None)
    found = waits.get(key) if isinstance(waits, dict) else None
    return found if isinstance(found, int) else None


def _with_defaults(operation: OperationDefinitionNode, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The variables as the operation runs with them: a variable not given takes its default
    (`query($g: Int = 4096)` was priced as if `$g` were absent, 1 GPU)."""
    values = dict(variables)
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        if name not in values and definition.default_value is not None:
            try:
                values[name] = value_from_ast_untyped(definition.default_value)
            except (TypeError, ValueError):
                values[name] = None
    return values


def _args(node: FieldNode, variables: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for arg in node.arguments or ():
        value: ValueNode = arg.value
        try:
            out[arg.name.value] = value_from_ast_untyped(value, dict(variables))
        except (TypeError, ValueError):
            out[arg.name.value] = None
    return out


class QueryCostLimit(SchemaExtension):
    """Refuses too expensive operations, and charges the others to the caller's budget."""

    async def on_execute(self) -> AsyncIterator[None]:
        ctx = self.execution_context
        context = ctx.context
        settings = getattr(context, "settings", None)
        document = ctx.graphql_document
        if settings is None or document is None or ctx.result is not None:
            yield
            return
        try:
            keyed = keyed_fields(document, ctx.operation_name, ctx.variables)
        except CostUnknown as err:
            ctx.result = ExecutionResult(data=None, errors=[_unpriced(str(err), settings.graphql_max_cost)])
            yield
            return
        by_sites = any(_priced_by_sites(name, args) for same_key in keyed.values() for name, args in same_key)
        services = getattr(context, "services", None)
        sites = (
            await services.sites.count(max_age_s=SITE_COUNT_TTL_S, unknown=MAX_SITES)
            if by_sites and services is not None
            else MAX_SITES
        )
        bill = charge(keyed, sites, settings.graphql_max_cost)
        cost = bill.cost
        if bill.refused:
            ctx.result = ExecutionResult(data=None, errors=[QueryTooExpensive(bill.full, settings.graphql_max_cost)])
        else:
            setattr(context, WAIT_SEARCHES_ATTR, bill.wait_searches)
            budget = getattr(context, "query_budget", None)
            principal = getattr(context, "principal", None)
            if budget is not None and principal is not None and not budget.allow(principal.name, cost=cost):
                ctx.result = ExecutionResult(
                    data=None, errors=[QueryBudgetExceeded(cost, budget.wait_s(principal.name, cost))]
                )
        yield


def _unpriced(why: str, limit: int) -> GraphQLError:
    """A document whose cost is unknown is refused as too expensive (QueryTooExpensive's code),
    with no cost to quote."""
    return GraphQLError(
        f"query too expensive: its cost cannot be computed ({why})",
        extensions={"code": "QUERY_TOO_EXPENSIVE", "status": 400, "cost": None, "limit": limit},
    )
