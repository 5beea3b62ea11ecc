"""Store outages in GraphQL: a typed error any client can act on, not "Unexpected error.".

A resolver that hits an unreachable store (or one that timed out) raised, the error was
masked to "Unexpected error." under HTTP 200 and a traceback logged per request. This
extension, which runs before the masking, turns those into errors whose
`extensions.code` is `STORE_UNAVAILABLE` (retry later) or `STORE_TIMEOUT`, and logs the
outage once (graphsvc.errors.report_outage), without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql.error import GraphQLError
from strawberry.extensions import SchemaExtension

from graphsvc.errors import TIMED_OUT, UNAVAILABLE, TimedOut, Unavailable, report_outage


def typed(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if isinstance(original, Unavailable):
        report_outage(original)
        code, message = "STORE_UNAVAILABLE", UNAVAILABLE
    elif isinstance(original, TimedOut):
        code, message = "STORE_TIMEOUT", TIMED_OUT
    else:
        return error
    return GraphQLError(
        message,
        nodes=error.nodes,
        path=error.path,
        extensions={"code": code, "status": 503, "retryable": True},
    )


def should_log(error: GraphQLError) -> bool:
    """Strawberry logs every error with its traceback; a store outage is logged once, elsewhere."""
    return not isinstance(error.original_error, Unavailable | TimedOut)


class StoreErrors(SchemaExtension):
    """List it after MaskErrors: its exit runs first, so the typed errors are not masked."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [typed(e) for e in result.errors]
