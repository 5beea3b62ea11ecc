"""Which operation of a document runs: the named one, or the only one.

The GraphQL spec refuses a document of several operations sent without `operationName`
("Must provide operation name if query contains multiple operations"). Strawberry's execution
context answers its `operation_name` with the first operation's name when none was given, so
graphql-core was handed a name and ran the first operation (a probe, stop 58): a client that
forgot the name got an answer to a question it may not have meant.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import ExecutionResult, GraphQLError, OperationDefinitionNode
from strawberry.extensions import SchemaExtension


class OperationNameRequired(GraphQLError):
    """Several operations and no name: which one to run is the client's to say."""

    def __init__(self) -> None:
        super().__init__(
            "Must provide operation name if query contains multiple operations.",
            extensions={"code": "OPERATION_NAME_REQUIRED", "status": 400},
        )


class OneOperationOrNamed(SchemaExtension):
    """Refuses a document of several operations sent without `operationName`; nothing runs."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        document = ctx.graphql_document
        # The name as the request gave it: `provided_operation_name` is an init-only field (its
        # class default, None, is what reading it gives), kept as `_provided_operation_name`.
        # tests/integration/test_graphql.py runs a named second operation, so a strawberry
        # that renames it fails there, not silently.
        provided = getattr(ctx, "_provided_operation_name", None)
        if ctx.result is None and document is not None and provided is None:
            operations = sum(isinstance(d, OperationDefinitionNode) for d in document.definitions)
            if operations > 1:
                ctx.result = ExecutionResult(data=None, errors=[OperationNameRequired()])
        yield
