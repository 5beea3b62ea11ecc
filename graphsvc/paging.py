"""Page sizes, one rule for every paged read (hosts, GPUs, reservations, search, the GPU grid).

`first` below 1 is refused: it was clamped to 1 and answered one item where the caller asked
for none or made a mistake (a probe's `reservations(first: -100)`).
"""

from __future__ import annotations

from graphsvc.errors import InvalidInput

MAX_PAGE = 500


def page_size(first: int, limit: int = MAX_PAGE) -> int:
    """A page of `first`, at most `limit`."""
    if first < 1:
        raise InvalidInput(f"first: at least 1 (got {first})")
    return min(first, limit)
