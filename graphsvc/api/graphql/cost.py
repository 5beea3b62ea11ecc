"""What a GraphQL operation costs, before it runs: a pure function over the parsed document.

Depth, alias and token limits bound the size of a document, not the work it asks for: 15
aliases of `placement(gpus: 4096)` passed them all and took 7 s. Each root field has a
weight in rough units of store work (about a millisecond); aliases repeat a field, so they
add up; every field that runs a placement search grows with the GPUs it searches for, read as
its resolver reads them (a request text by the request parser itself, compareSites once per
site), except a shaped job, which reads the whole cluster whatever its size and is priced as the
largest search; pages grow with the page size. Nested fields are free: a root field's resolver
fetches what it returns in its own queries. docs/deploy.md (Limits) has the table.

The schema extension `QueryCostLimit` refuses an operation costing more than
`graphql_max_cost` and charges the rest to a per-token budget (a token bucket), so one
token cannot keep the service busy with affordable queries either.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
)
from graphql.utilities import value_from_ast_untyped
from strawberry.extensions import SchemaExtension

from graphsvc.api.graphql.context import QueryBudgetExceeded, QueryTooExpensive
from graphsvc.placement.request import MAX_GPUS, parse_request
from graphsvc.placement.shape import MAX_RANKS, parse_shape

PER_GPU = 1 / 8  # a placement's work grows with the GPUs it must find: one unit per 8 GPUs
PLACEMENT_BASE = 2  # also the price of a request refused before any search (a malformed text, > 4,096 GPUs)
PAGE_UNIT = 100  # one unit per 100 rows of a page
# compareSites without `sites` searches every site of the catalogue, which only the store knows: it
# is priced as this many (the multi-site demo's three). Naming `sites` prices exactly those.
UNNAMED_SITES = 3

FIXED = {
    "clusterSummary": 5,  # aggregates over every GPU
    "drift": 20,  # renders a whole cluster's export and compares it
    "fabricPath": 5,
    "host": 1,
    "reservation": 1,
    "renew": 1,
    "release": 1,
    "events": 1,
    "__typename": 0,
    "__schema": 10,
    "__type": 1,
}
PAGED = {"hosts": 100, "gpus": 100, "reservations": 100, "fabric": 200}  # field -> default `first`
# Fields that run one placement search for `request.gpus` GPUs (reserve: or hold the GPUs named;
# preempt: reserves, and plans the preemption only when nothing is free).
PLACEMENT_LIKE = {"placement", "preemptionPlan", "reserve", "sitePlacement", "preempt"}


class CostUnknown(ValueError):
    """The document's cost cannot be computed: it is refused, never priced 0 (a walk that stopped
    at 21 nested fragments priced fifteen 4,096-GPU placements at 0, and they ran)."""


def field_cost(name: str, args: Mapping[str, Any]) -> int:
    """The cost of one root field with its (variable-resolved) arguments."""
    if name in FIXED:
        return FIXED[name]
    if name in PAGED:
        first = _int(args.get("first"), PAGED[name])
        return 1 + math.ceil(max(first, 0) / PAGE_UNIT)
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
        return _compare_sites_cost(args)
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


def _compare_sites_cost(args: Mapping[str, Any]) -> int:
    """One placement search per site compared (graphsvc.sites.service.compare_sites)."""
    request, text = args.get("request"), args.get("text")
    if (request is None) == (text is None):
        return PLACEMENT_BASE  # "give either request or text": answered unsearched
    gpus = text_gpus(text) if text is not None else _structured_gpus(request)
    if gpus is None or gpus > MAX_GPUS:
        return PLACEMENT_BASE  # the request is validated before any site is searched
    sites = args.get("sites")
    if isinstance(sites, str):  # a single value where a list is expected is a list of one
        count = 1
    elif isinstance(sites, list) and sites:
        count = len({str(s) for s in sites})
    else:
        count = UNNAMED_SITES
    return count * search_cost(gpus)


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return int(min(value, 10**9))


def operation_cost(document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None) -> int:
    """The summed cost of the root fields the named (or only) operation selects.

    Raises CostUnknown for a document whose root fields cannot all be found."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [op for op in operations if operation_name is None or (op.name and op.name.value == operation_name)]
    if not chosen:
        return 0
    values = _with_defaults(chosen[0], variables or {})
    return sum(
        max(field_cost(f.name.value, _args(f, values)) for f in same_key)
        for same_key in _root_fields(chosen[0].selection_set, fragments).values()
    )


def _root_fields(
    selection_set: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode]
) -> dict[str, list[FieldNode]]:
    """The root fields by response key, collected as graphql-core collects them to run them: through
    inline fragments at any depth, each named fragment once, fields of one key merged into one
    execution (validation makes their arguments equal; the dearest is priced where they differ).
    No depth limit, and no recursion: the walk is linear in the document."""
    found: dict[str, list[FieldNode]] = {}
    spread: set[str] = set()
    pending = [selection_set]
    while pending:
        for sel in pending.pop().selections:
            if isinstance(sel, FieldNode):
                found.setdefault((sel.alias or sel.name).value, []).append(sel)
            elif isinstance(sel, InlineFragmentNode):
                pending.append(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode) and sel.name.value not in spread:
                spread.add(sel.name.value)
                fragment = fragments.get(sel.name.value)
                if fragment is None:
                    raise CostUnknown(f"fragment {sel.name.value!r} is not defined")
                pending.append(fragment.selection_set)
    return found


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

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        context = ctx.context
        settings = getattr(context, "settings", None)
        document = ctx.graphql_document
        if settings is None or document is None or ctx.result is not None:
            yield
            return
        try:
            cost = operation_cost(document, ctx.operation_name, ctx.variables)
        except CostUnknown as err:
            ctx.result = ExecutionResult(data=None, errors=[_unpriced(str(err), settings.graphql_max_cost)])
            yield
            return
        if cost > settings.graphql_max_cost:
            ctx.result = ExecutionResult(data=None, errors=[QueryTooExpensive(cost, settings.graphql_max_cost)])
        else:
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
