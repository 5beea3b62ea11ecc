"""Page sizes, one rule for every paged read (hosts, GPUs, reservations, search, the GPU grid).

`first` below 1 is an empty page (Relay's reading of `first: 0`): it was clamped to 1 and
answered one item where the caller asked for none (a probe's `reservations(first: -100)`). Not
an error: a GraphQL connection has no typed error to answer with, and an error in `errors` reads
as the server failing (the schema fuzzer's check, tests/integration/test_fuzz.py).
"""

from __future__ import annotations

MAX_PAGE = 500


def page_size(first: int, limit: int = MAX_PAGE) -> int:
    """A page of `first`, at least 0 and at most `limit`."""
    return max(0, min(first, limit))
