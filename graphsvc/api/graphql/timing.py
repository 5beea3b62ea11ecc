"""GraphQL latency per operation, labelled with its root fields, into the app's request histogram.

The label is made only of the schema's own root field names, never of text the client chose:
every name a document held (an unknown field, a fragment's name) was a label, so each document
minted a Prometheus series of its own, valid or not (4,000 requests from a collector token made
4,001 series and /metrics grew from 7 KB to 8 MB). A document that names anything else, or whose
operation cannot be found, is "invalid"; one of more than MAX_NAMED root fields is "multiple", so
the series are at most the schema's root fields and their pairs (a few hundred), whatever is sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from graphql import DocumentNode, GraphQLSchema
from graphql.utilities import get_operation_ast
from strawberry.extensions import SchemaExtension

from graphsvc.api.graphql.walk import UnknownFragment, fragments_of, root_fields

# Root fields a label names one by one, joined (the explorer's sites page asks for sites and
# siteLinks together); an operation of more is "multiple".
MAX_NAMED = 2
META_FIELDS = frozenset({"__typename", "__schema", "__type"})


class GraphQLTimer(SchemaExtension):
    """Labels GraphQL latency with the operation's root fields (placement, reserve, ...)."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        yield
        histogram = getattr(getattr(self.execution_context.context, "metrics", None), "request_seconds", None)
        if histogram is not None:  # graphsvc.api.metrics.Metrics (the context carries the app's)
            fields = _root_fields(self.execution_context)
            histogram.labels(f"graphql {fields}").observe(time.perf_counter() - started)


def _root_fields(ctx: Any) -> str:
    """The label: the operation's root fields, sorted and joined, when each is one of the schema's;
    "invalid" when any is not (or the operation is not there), "multiple" past MAX_NAMED."""
    document = ctx.graphql_document
    schema = getattr(ctx.schema, "_schema", None)
    if not isinstance(document, DocumentNode) or not isinstance(schema, GraphQLSchema):
        return "invalid"
    try:
        op = get_operation_ast(document, ctx.operation_name)
    except (AttributeError, TypeError, ValueError):  # an operation_name of the wrong type, say
        return "invalid"
    root = schema.get_root_type(op.operation) if op is not None else None
    if op is None or root is None:
        return "invalid"
    try:  # the field names, through its fragments, each read once (walk.root_fields)
        names = {
            f.name.value
            for same_key in root_fields(op.selection_set, fragments_of(document)).values()
            for f in same_key
        }
    except UnknownFragment:
        return "invalid"
    if not names or not names <= (root.fields.keys() | META_FIELDS):
        return "invalid"
    return ",".join(sorted(names)) if len(names) <= MAX_NAMED else "multiple"
