"""What a GraphQL operation costs, before it runs: a pure function over the parsed document.

Depth, alias and token limits bound the size of a document, not the work it asks for: 15
aliases of `placement(gpus: 4096)` passed them all and took 7 s. Each root field has a
weight in rough units of store work (about a millisecond); aliases repeat a field, so they
add up; placement-like fields grow with the GPUs asked for, pages with the page size.
Nested fields are free: a root field's resolver fetches what it returns in its own queries.

The schema extension `QueryCostLimit` refuses an operation costing more than
`graphql_max_cost` and charges the rest to a per-token budget (a token bucket), so one
token cannot keep the service busy with affordable queries either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
)
from graphql.utilities import value_from_ast_untyped
from strawberry.extensions import SchemaExtension

from graphsvc.api.graphql.context import QueryBudgetExceeded, QueryTooExpensive
from graphsvc.placement.request import MAX_GPUS, MAX_TEXT

PER_GPU = 1 / 8  # a placement's work grows with the GPUs it must find: one unit per 8 GPUs
PLACEMENT_BASE = 2
PAGE_UNIT = 100  # one unit per 100 rows of a page

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
PLACEMENT_LIKE = {"placement", "preemptionPlan", "placementText", "reserve"}

_LEADING_COUNT = re.compile(r"^\s*(\d+)", re.ASCII)


def field_cost(name: str, args: Mapping[str, Any]) -> int:
    """The cost of one root field with its (variable-resolved) arguments."""
    if name in FIXED:
        return FIXED[name]
    if name in PAGED:
        first = _int(args.get("first"), PAGED[name])
        return 1 + math.ceil(max(first, 0) / PAGE_UNIT)
    if name in PLACEMENT_LIKE:
        gpus = _gpus(name, args)
        # More GPUs than any request may ask for is refused before any search: it costs the base,
        # so the caller hears the request's own error ("gpus: must be between 1 and 4096") as REST
        # and `graphsvc reserve` say it, not a cost it could never bring under the limit.
        return PLACEMENT_BASE + (0 if gpus > MAX_GPUS else math.ceil(max(gpus, 0) * PER_GPU))
    return 1


def _gpus(name: str, args: Mapping[str, Any]) -> int:
    if name == "placementText":
        match = _LEADING_COUNT.match(str(args.get("text") or ""))
        if match is None:
            return 1
        # The whole count, as the request parser reads it: leading zeros and any digits int()
        # takes ("0000000004096xH100" is 4096 GPUs; its first nine digits were read as 0). A text
        # too long to hold more digits than int() converts is refused by the parser unsearched.
        digits = match.group(1)
        return min(int(digits), 10**9) if len(digits) <= MAX_TEXT else 1
    request = args.get("request")
    if name == "reserve":
        data = args.get("input") if isinstance(args.get("input"), Mapping) else {}
        assert isinstance(data, Mapping)
        if isinstance(data.get("gpus"), list):
            return len(data["gpus"])
        request = data.get("request")
    if isinstance(request, Mapping):
        return _int(request.get("gpus"), 1)
    return 1


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return int(min(value, 10**9))


def operation_cost(document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None) -> int:
    """The summed cost of the root fields the named (or only) operation selects."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [op for op in operations if operation_name is None or (op.name and op.name.value == operation_name)]
    if not chosen:
        return 0
    return sum(
        field_cost(f.name.value, _args(f, variables or {})) for f in _root_fields(chosen[0].selection_set, fragments)
    )


def _root_fields(
    selection_set: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode], depth: int = 0
) -> Iterator[FieldNode]:
    if depth > 20:  # validated documents have no fragment cycles; this only bounds the walk
        return
    for sel in selection_set.selections:
        if isinstance(sel, FieldNode):
            yield sel
        elif isinstance(sel, InlineFragmentNode):
            yield from _root_fields(sel.selection_set, fragments, depth + 1)
        elif isinstance(sel, FragmentSpreadNode) and sel.name.value in fragments:
            yield from _root_fields(fragments[sel.name.value].selection_set, fragments, depth + 1)


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
        cost = operation_cost(document, ctx.operation_name, ctx.variables)
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
