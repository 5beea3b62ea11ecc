"""Which request texts are shaped jobs: standard library only, so the CLI can tell without
importing the parser (which costs it ~0.25 s at start)."""

from __future__ import annotations

SHAPE_KEYS = ("tp", "pp", "dp", "groups", "group-size")


def is_shaped(text: str) -> bool:
    """Does this request text describe a shaped job (tp=/pp=/dp=/groups=) rather than a GPU count?"""
    first = text.split(maxsplit=1)[0].lower() if text.strip() else ""
    return any(first.startswith(k + "=") for k in SHAPE_KEYS)
