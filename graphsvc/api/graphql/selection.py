"""What a query selects below a field, so a resolver reads only what is asked for."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from strawberry.types.nodes import SelectedField, Selection


def selects(nodes: Sequence[Selection], names: Collection[str]) -> bool:
    """Does this selection name any of these fields, directly or through fragments?"""
    for node in nodes:
        if isinstance(node, SelectedField):
            if node.name in names:
                return True
        elif selects(node.selections, names):  # an inline fragment or a fragment spread
            return True
    return False
