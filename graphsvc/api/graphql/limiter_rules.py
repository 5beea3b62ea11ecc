"""The depth, alias and finite-Float limits as validation rules built once per process.

The rule classes are created once; each request gets a fresh, stateless `AddValidationRules`
around the same classes, so a document seen before is validated from `ValidationCache` (keyed by
schema, document and rules): strawberry's `QueryDepthLimiter` and `MaxAliasesLimiter` made new
rule classes each time they were constructed, per request, so the cache never hit and every
request was validated from scratch (31% of a reserve's CPU went to GraphQL).

The rules are our own, not strawberry's, which did their work in the rule's constructor, before
graphql-core's own rules had looked at the document:
- a spread of a fragment the document does not define (`{ ...Nope }`) raised a KeyError in the
  depth limiter: over HTTP the answer was the bare text 'Nope' and a traceback in the log, over
  SSE the stream was cut, over a WebSocket a bare `complete`. Here an unknown fragment counts for
  nothing and graphql-core's KnownFragmentNames tells it ("Unknown fragment 'Nope'.");
- both walked a fragment again at every spread of it, so a chain of fragments each spreading the
  next twice took 2**n steps (17 fragments: a second; the 2,000-token limit allows some 200).
  Here each fragment is measured once and the measure reused.
The limits are the same: a field with a selection set is one level (introspection fields are not
counted), at most MAX_DEPTH; every alias counts once for each time it would be selected (a
fragment spread twice counts twice), at most MAX_ALIASES in the document. Both are measured by the
walk the cost and the latency label share (walk.Fold).

`FiniteFloats` refuses a Float literal too large for a double (it read as infinity), as the
too-long Int is refused: a validation error, never a value handed to a resolver.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from graphql import (
    ASTValidationRule,
    FieldNode,
    FloatValueNode,
    GraphQLError,
    GraphQLFloat,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    get_named_type,
)
from strawberry.extensions import AddValidationRules

from graphsvc.api.graphql.walk import Fold, fragments_of

MAX_DEPTH = 10
MAX_ALIASES = 15


def _depth_of(field: FieldNode, inner: Callable[[SelectionSetNode], int]) -> int:
    """A field with a selection set is one level (introspection fields are not counted)."""
    if field.selection_set is None or field.name.value.startswith("__"):
        return 0
    return 1 + inner(field.selection_set)


def _aliases_of(field: FieldNode, inner: Callable[[SelectionSetNode], int]) -> int:
    """An aliased field counts once, and so does each alias below it."""
    return (field.alias is not None) + (inner(field.selection_set) if field.selection_set is not None else 0)


def _deepest(measures: list[int]) -> int:
    return max(measures, default=0)


def depth(context: ValidationContext) -> Fold:
    """Levels of fields with a selection set, each fragment measured once (walk.Fold)."""
    return Fold(fragments_of(context.document), _depth_of, _deepest)


def aliases(context: ValidationContext) -> Fold:
    """Aliased fields selected, a fragment's once for each spread of it (walk.Fold)."""
    return Fold(fragments_of(context.document), _aliases_of, sum)


class DepthLimit(ValidationRule):
    """Each operation at most MAX_DEPTH levels deep."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        measure = depth(context)
        for op in context.document.definitions:
            if isinstance(op, OperationDefinitionNode) and measure(op.selection_set) > MAX_DEPTH:
                name = op.name.value if op.name else "anonymous"
                context.report_error(GraphQLError(f"'{name}' exceeds maximum operation depth of {MAX_DEPTH}", op))


class AliasLimit(ValidationRule):
    """At most MAX_ALIASES aliases in the document's operations together."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        measure = aliases(context)
        ops = [d for d in context.document.definitions if isinstance(d, OperationDefinitionNode)]
        total = sum(measure(op.selection_set) for op in ops)
        if total > MAX_ALIASES:
            shown = str(total) if total < 10**6 else "over a million"  # a fragment fan-out multiplies
            context.report_error(GraphQLError(f"{shown} aliases found. Allowed: {MAX_ALIASES}"))


class FiniteFloats(ValidationRule):
    """Every Float written in the document (an argument, an input field, a variable's default) is
    a finite number. graphql-core reads a Float literal with Python's float(), which reads one too
    large for a double, such as a 5,000-digit number or 1e400, as infinity, and passed it on: a
    resolver got `deadlineHours: inf` or `lastCheckpointAt: inf`. A variable sent as such a number
    is refused by graphql-core itself ("Float cannot represent non numeric value: inf"). Told like a
    too-long Int (schema._told_too_long), without echoing the digits."""

    def enter_float_value(self, node: FloatValueNode, *_args: object) -> None:
        self._check(node)

    def enter_int_value(self, node: IntValueNode, *_args: object) -> None:
        self._check(node)  # an Int literal is a Float where a Float is expected: 1 followed by 5,000 zeros

    def _check(self, node: FloatValueNode | IntValueNode) -> None:
        expected = self.context.get_input_type()
        if expected is None or get_named_type(expected) is not GraphQLFloat or math.isfinite(float(node.value)):
            return
        self.report_error(
            GraphQLError(
                f"Number too large ({len(node.value)} characters): a Float is a finite 64-bit floating-point "
                "number (at most about 1.8e308)",
                node,
            )
        )


LIMIT_RULES: list[type[ASTValidationRule]] = [DepthLimit, AliasLimit, FiniteFloats]


def limit_rules() -> AddValidationRules:
    """The extension factory: the same rule classes for every request."""
    return AddValidationRules(LIMIT_RULES)
