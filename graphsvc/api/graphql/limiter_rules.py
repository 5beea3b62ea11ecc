"""The depth and alias limits as validation rules built once per process.

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
fragment spread twice counts twice), at most MAX_ALIASES in the document.
"""

from __future__ import annotations

from collections.abc import Callable

from graphql import (
    ASTValidationRule,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)
from strawberry.extensions import AddValidationRules

MAX_DEPTH = 10
MAX_ALIASES = 15


class _Measure:
    """One document's fragments, each measured once (depth, aliases) when first spread."""

    def __init__(self, context: ValidationContext) -> None:
        self.fragments = {
            d.name.value: d for d in context.document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self._depths: dict[str, int] = {}
        self._aliases: dict[str, int] = {}

    def depth(self, selections: SelectionSetNode) -> int:
        """Levels of fields with a selection set below `selections`, capped just past MAX_DEPTH
        (the parser bounds the nesting; spreads recurse once per fragment)."""
        deepest = 0
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                if sel.selection_set is not None and not sel.name.value.startswith("__"):
                    deepest = max(deepest, 1 + self.depth(sel.selection_set))
            elif isinstance(sel, InlineFragmentNode):
                deepest = max(deepest, self.depth(sel.selection_set))
            elif isinstance(sel, FragmentSpreadNode):
                deepest = max(deepest, self._fragment(sel.name.value, self._depths, self.depth))
            if deepest > MAX_DEPTH:
                break
        return min(deepest, MAX_DEPTH + 1)

    def aliases(self, selections: SelectionSetNode) -> int:
        """Aliased fields `selections` selects, a fragment's once for each spread of it."""
        count = 0
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                count += sel.alias is not None
                if sel.selection_set is not None:
                    count += self.aliases(sel.selection_set)
            elif isinstance(sel, InlineFragmentNode):
                count += self.aliases(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode):
                count += self._fragment(sel.name.value, self._aliases, self.aliases)
        return count

    def _fragment(self, name: str, memo: dict[str, int], measure: Callable[[SelectionSetNode], int]) -> int:
        """A fragment's measure; 0 for one the document does not define (KnownFragmentNames tells
        it) and for one spread inside itself (NoFragmentCycles tells it)."""
        if name not in memo:
            fragment = self.fragments.get(name)
            memo[name] = 0  # while it is measured: a spread of it inside itself adds nothing
            if fragment is not None:
                memo[name] = measure(fragment.selection_set)
        return memo[name]


class DepthLimit(ValidationRule):
    """Each operation at most MAX_DEPTH levels deep."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        measure = _Measure(context)
        for op in context.document.definitions:
            if isinstance(op, OperationDefinitionNode) and measure.depth(op.selection_set) > MAX_DEPTH:
                name = op.name.value if op.name else "anonymous"
                context.report_error(GraphQLError(f"'{name}' exceeds maximum operation depth of {MAX_DEPTH}", op))


class AliasLimit(ValidationRule):
    """At most MAX_ALIASES aliases in the document's operations together."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        measure = _Measure(context)
        ops = [d for d in context.document.definitions if isinstance(d, OperationDefinitionNode)]
        total = sum(measure.aliases(op.selection_set) for op in ops)
        if total > MAX_ALIASES:
            shown = str(total) if total < 10**6 else "over a million"  # a fragment fan-out multiplies
            context.report_error(GraphQLError(f"{shown} aliases found. Allowed: {MAX_ALIASES}"))


LIMIT_RULES: list[type[ASTValidationRule]] = [DepthLimit, AliasLimit]


def limit_rules() -> AddValidationRules:
    """The extension factory: the same rule classes for every request."""
    return AddValidationRules(LIMIT_RULES)
