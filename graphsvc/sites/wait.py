"""The predicted wait's search, the pure part: which of a site's lease-expiry times is the first
after which a job fits, in as many placement searches as the query's price paid for.

The GPUs an expiry frees are freed at every later one too, so a job that fits after one expiry
fits after every later one: "fits after probe i" is false up to some index and true from there.
With enough searches (`needed`, ceil(log2(probes + 1)): 4 for 12 probes) a bisection finds that
first index exactly, or that there is none. With fewer (the operation's cost limit cut them,
graphsvc.api.graphql.cost.charge) the answer is coarse, never silently: the last probe is tried
first, so "never fits" is still exact and a job that fits at some expiry is always found to fit;
the searches left bisect the probes before it. The answer is then the first probe tested after
which the job fits, an upper bound of the exact one, which lies in probes[low..index].
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


def needed(probes: int) -> int:
    """The searches a bisection over `probes` expiry times needs to be exact: probes + 1 outcomes
    (the first that fits, or none)."""
    return max(probes, 0).bit_length()


@dataclass(frozen=True)
class FirstFit(Generic[T]):
    """What the searches found. `index`: the probe the answer stands at (the first tested after
    which the job fits), None when none fits or none was searched; the exact first fit is then in
    probes[low..index]. `exact`: the full bisection's answer (low == index, or no probe fits);
    False also when no search ran (`searches` 0 with probes to try: nothing is known)."""

    index: int | None
    result: T | None
    low: int
    searches: int
    exact: bool


async def first_fit(probes: int, allowance: int | None, attempt: Callable[[int], Awaitable[T | None]]) -> FirstFit[T]:
    """The first of `probes` expiry times (by index) after which `attempt` finds a placement (None:
    it does not fit), in at most `allowance` attempts (None: as many as the bisection needs)."""
    if probes <= 0:
        return FirstFit(None, None, 0, 0, True)
    if allowance is None or allowance >= needed(probes):
        return await _bisect(0, probes, None, 0, None, attempt)
    if allowance <= 0:
        return FirstFit(None, None, 0, 0, False)
    last = await attempt(probes - 1)
    if last is None:  # not even once every lease has run out: exact, as the full bisection says
        return FirstFit(None, None, probes, 1, True)
    return await _bisect(0, probes - 1, last, 1, allowance, attempt)


async def _bisect(
    low: int,
    high: int,
    found: T | None,
    searches: int,
    allowance: int | None,
    attempt: Callable[[int], Awaitable[T | None]],
) -> FirstFit[T]:
    """The first fit is in [low, high) or, where `found`, is `high` (found there); at most
    `allowance` searches in all."""
    while low < high and (allowance is None or searches < allowance):
        mid = (low + high) // 2
        result = await attempt(mid)
        searches += 1
        if result is not None:
            found, high = result, mid
        else:
            low = mid + 1
    if found is None:
        return FirstFit(None, None, low, searches, low == high)
    return FirstFit(high, found, low, searches, low == high)


def share(pool: int | None, needs: Sequence[int]) -> list[int | None]:
    """The wait searches each full site may run out of `pool` (None: each as many as it needs):
    one at a time, in the sites' order, to each site that needs more, so that every full site gets
    a search before any gets a second (a site with one search still learns whether the job ever
    fits, and an upper bound of its wait)."""
    if pool is None:
        return [None] * len(needs)
    given = [0] * len(needs)
    left = max(pool, 0)
    while left > 0:
        progressed = False
        for i, need in enumerate(needs):
            if left > 0 and given[i] < need:
                given[i] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return list(given)
