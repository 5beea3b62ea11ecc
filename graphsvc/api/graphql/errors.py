"""The GraphQL side of the error model (graphsvc.errors): every expected failure is a typed
result implementing `Error`, inside a `...Result` union with the success type, so a client
can always select `... on Error { message }` whatever the operation.

Failures nobody expects (a bug) are masked to "Unexpected error."; store outages are errors
with `extensions.code` STORE_UNAVAILABLE or STORE_TIMEOUT (graphsvc.api.graphql.store_errors).
"""

from __future__ import annotations

import strawberry


@strawberry.interface(description="An expected failure: the request was understood and refused; `message` says why.")
class Error:
    message: str


@strawberry.type(description="The input is invalid; `field` names the input at fault. The same input fails again.")
class ValidationError(Error):
    field: str


@strawberry.type(description="What the input names does not exist.")
class NotFound(Error):
    id: str
