"""Strawberry's parser cache, with a document that does not parse left to strawberry's own parse.

strawberry's ParserCache parses in its `on_parse` hook, outside the error handling around
strawberry's own parse. Over HTTP the request's outer handler turned its syntax error into the
answer; over a WebSocket nothing did: an unclosed brace or a query over the token limit got no
error frame (a bare `complete`, or nothing) and left a traceback in the log (a probe's case). Here
such a document is not cached: strawberry parses it again, with the same options, where its error
becomes the answer on every transport.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from graphql.error import GraphQLError
from strawberry.extensions import ParserCache


class SafeParserCache(ParserCache):
    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        with contextlib.suppress(GraphQLError):  # strawberry's parse raises it again, inside its own handling
            context.graphql_document = self.cached_parse_document(context.query, **context.parse_options)
        yield
