"""The one walk over a GraphQL document's selections and fragments, for the cost, the limits and
the latency label.

Three walkers each had their own (cost.py, limiter_rules.py, timing.py), and each fixed the same
bugs on its own timetable: a fragment walked again at every spread of it (2**n steps for a chain
of fragments each spreading the next twice), a walk that stopped at 20 nested fragments and
priced what lay deeper at 0, a spread of an undefined fragment that raised a KeyError. Here:

- `root_fields`: the fields an operation's root selection set runs, by response key, as
  graphql-core collects them (through inline fragments at any depth, each named fragment once),
  without recursion; a spread of an undefined fragment raises `UnknownFragment`.
- `Fold`: a measure of a selection set (its depth, its aliases) in which each named fragment is
  measured once and its measure reused at every spread of it; an undefined fragment, or one
  spread inside itself, measures 0 (graphql-core's KnownFragmentNames and NoFragmentCycles tell
  those).

@skip/@include and type conditions are not looked at: a field they leave out still counts, so the
cost and the limits may only err high, never low.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
)

Fragments = Mapping[str, FragmentDefinitionNode]


class UnknownFragment(ValueError):
    """A spread names a fragment the document does not define."""

    def __init__(self, name: str) -> None:
        super().__init__(f"fragment {name!r} is not defined")
        self.name = name


def fragments_of(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    """The document's fragment definitions by name."""
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def root_fields(selection_set: SelectionSetNode, fragments: Fragments) -> dict[str, list[FieldNode]]:
    """The root fields by response key, collected as graphql-core collects them to run them: through
    inline fragments at any depth, each named fragment once, fields of one key merged into one
    execution (a list: validation makes their arguments equal, a caller that prices them takes
    the dearest where they differ). No depth limit and no recursion: the walk is linear in the
    document. Raises UnknownFragment at a spread of a fragment the document does not define."""
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
                    raise UnknownFragment(sel.name.value)
                pending.append(fragment.selection_set)
    return found


# A field's measure, given the fold to measure the field's own selection set with.
FieldMeasure = Callable[[FieldNode, Callable[[SelectionSetNode], int]], int]


class Fold:
    """A measure of selection sets: `field` measures each field, `combine` joins the measures of a
    selection set's members (max for a depth, sum for a count). Each named fragment is measured
    once, when first spread, and that measure stands for it at every spread (a chain of fragments
    each spreading the next twice is walked once, not 2**n times); an undefined fragment or a
    spread of a fragment inside itself measures 0. One Fold per document and measure."""

    def __init__(self, fragments: Fragments, field: FieldMeasure, combine: Callable[[list[int]], int]) -> None:
        self.fragments = fragments
        self._field = field
        self._combine = combine
        self._memo: dict[str, int] = {}

    def __call__(self, selections: SelectionSetNode) -> int:
        # A loop, not a generator: one Python frame per nested selection set, as few as the
        # parser's own, so a document the parser could read is never too deep to measure.
        measures = []
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                measures.append(self._field(sel, self))
            elif isinstance(sel, InlineFragmentNode):
                measures.append(self(sel.selection_set))
            elif isinstance(sel, FragmentSpreadNode):
                measures.append(self._fragment(sel.name.value))
        return self._combine(measures)

    def _fragment(self, name: str) -> int:
        if name not in self._memo:
            fragment = self.fragments.get(name)
            self._memo[name] = 0  # while it is measured: a spread of it inside itself adds nothing
            if fragment is not None:
                self._memo[name] = self(fragment.selection_set)
        return self._memo[name]
