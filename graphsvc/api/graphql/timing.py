"""GraphQL latency per operation, labelled with its root fields, into the app's request histogram."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from strawberry.extensions import SchemaExtension


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
    try:
        op = ctx.graphql_document.definitions[0]
        names = sorted({sel.name.value for sel in op.selection_set.selections if hasattr(sel, "name")})
        return ",".join(names)[:100] or "unknown"
    except (AttributeError, IndexError, TypeError):
        return "invalid"
