"""compareSites under the cost limit: a comparison whose full price (5 searches a site) is over the
limit runs at what the limit pays for, never refused while its searches now fit; its predicted
wait then gets fewer searches and says so (graphsvc/sites/wait.py, graphsvc/api/graphql/cost.py).

Before: under the default limit of 1,000 units three sites could not compare a job above 512 GPUs,
one named site above 1,584: refused with QUERY_TOO_EXPENSIVE. Pure: no store.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from graphql import parse

from graphsvc.api.graphql import cost
from graphsvc.api.graphql.cost import charge, keyed_fields, operation_cost, search_cost
from graphsvc.sites import limits, wait
from graphsvc.sites.wait import first_fit, needed, share

LIMIT = 1000  # the default graphql_max_cost


def run(probes: int, fits_from: int, allowance: int | None) -> tuple[wait.FirstFit[int], list[int]]:
    """first_fit over `probes` expiry times where the job fits from index `fits_from` on
    (`probes`: never), with the indices it tried."""
    tried: list[int] = []

    async def attempt(i: int) -> int | None:
        tried.append(i)
        return i if i >= fits_from else None

    return asyncio.run(first_fit(probes, allowance, attempt)), tried


def old_bisection(probes: int, fits_from: int) -> tuple[int | None, list[int]]:
    """graphsvc.sites.service._after_wait's bisection before the budget: the index it answered and
    the indices it tried."""
    tried: list[int] = []
    found = None
    low, high = 0, probes
    while low < high:
        mid = (low + high) // 2
        tried.append(mid)
        if mid >= fits_from:
            found, high = mid, mid
        else:
            low = mid + 1
    return found, tried


CASES = [(p, f) for p in range(1, limits.MAX_WAIT_STEPS + 1) for f in range(p + 1)]


@pytest.mark.parametrize(("probes", "fits_from"), CASES)
def test_with_every_search_paid_for_the_wait_is_the_old_bisections(probes: int, fits_from: int) -> None:
    """Unchanged: the same searches, in the same order, and the same answer (None: never fits)."""
    answer, tried = old_bisection(probes, fits_from)
    for allowance in (None, limits.WAIT_SEARCHES, needed(probes)):
        fit, mine = run(probes, fits_from, allowance)
        assert (fit.index, mine, fit.exact) == (answer, tried, True)
        assert fit.searches == len(tried) <= needed(probes) <= limits.WAIT_SEARCHES


@pytest.mark.parametrize(("probes", "fits_from"), CASES)
def test_a_coarse_wait_is_an_upper_bound_within_the_range_it_reports(probes: int, fits_from: int) -> None:
    """Every allowance below what the bisection needs, every place the job starts to fit: the
    coarse wait is the first index tested after which the job fits, never before the exact one, and
    the exact one lies in [low, index]; "never fits" stays exact; no search beyond the allowance."""
    exact, _ = old_bisection(probes, fits_from)
    for allowance in range(needed(probes)):
        fit, tried = run(probes, fits_from, allowance)
        assert fit.searches == len(tried) <= allowance
        if allowance == 0:
            assert (fit.index, fit.exact, tried) == (None, False, [])  # nothing known: said so
            continue
        assert tried[0] == probes - 1  # the last first: whether it ever fits is known
        if exact is None:
            assert (fit.index, fit.exact, fit.searches) == (None, True, 1)
            continue
        assert fit.index is not None and fit.result == fit.index
        assert fit.index >= exact >= fit.low  # an upper bound, in the range it reports
        assert fit.index in tried and fit.index >= fits_from
        assert fit.exact == (fit.low == fit.index)
        assert fit.searches == allowance  # a coarse search uses all it was paid for
        assert all(i < fits_from for i in tried if i < fit.low)  # below low: tested, and no fit


def test_the_bisection_never_needs_more_than_it_is_priced_for() -> None:
    assert limits.WAIT_SEARCHES == needed(limits.MAX_WAIT_STEPS) == 4
    assert limits.COMPARE_SEARCHES == cost.COMPARE_SEARCHES == 5


@pytest.mark.parametrize(
    ("pool", "needs", "given"),
    [
        (None, [4, 4, 2], [None, None, None]),  # every search paid for: each its bisection
        (12, [4, 4, 4], [4, 4, 4]),
        (11, [4, 4, 4], [4, 4, 3]),
        (4, [4, 4, 4], [2, 1, 1]),  # one each before any gets a second
        (2, [4, 4, 4], [1, 1, 0]),
        (0, [4, 4], [0, 0]),
        (9, [4, 1, 2], [4, 1, 2]),  # a site never gets more than it needs
        (20, [], []),
    ],
)
def test_the_wait_searches_are_shared_among_the_full_sites(
    pool: int | None, needs: list[int], given: list[int | None]
) -> None:
    assert share(pool, needs) == given


def bill(field: str, limit: int = LIMIT, sites: int = 3) -> cost.Charge:
    return charge(keyed_fields(parse("{ " + field + " }"), None, None), sites, limit)


def compare(gpus: int, sites: int) -> str:
    named = ", ".join(f'"s{i}"' for i in range(sites))
    return f"c: compareSites(request: {{gpus: {gpus}}}, profile: {{gpuHours: 1}}, sites: [{named}]) {{ __typename }}"


@pytest.mark.parametrize(
    ("gpus", "sites", "waits"),
    [
        # The full price fits: not cut (the largest: 3 sites 512 GPUs, one site 1,584).
        (512, 3, None),
        (1584, 1, None),
        (8, 3, None),
        # Over it: the searches now, and the wait searches the rest of the limit pays for.
        (520, 3, 1000 // 67 - 3),  # 67 a search: 3 now, 11 of the 12 wait searches
        (1592, 1, 3),  # 201 a search: 1 now, 3 of 4
        (1984, 1, 3),
        (1992, 1, 2),
        (3984, 1, 1),  # 500 a search: the last expiry alone
        (4096, 1, 0),  # 514: only the search now
        (1312, 3, 3),  # 166: one wait search a site
        (2648, 3, 0),  # 333 a search: three now, nothing for a wait
    ],
)
def test_the_default_limit_runs_a_comparison_at_what_it_pays_for(gpus: int, sites: int, waits: int | None) -> None:
    each = search_cost(gpus)
    full = sites * limits.COMPARE_SEARCHES * each
    got = bill(compare(gpus, sites))
    assert got.full == full == operation_cost(parse("{ " + compare(gpus, sites) + " }"), None, None)
    assert not got.refused
    if waits is None:
        assert (got.cost, got.wait_searches) == (full, {})
    else:
        assert full > LIMIT >= got.cost
        assert got.wait_searches == {"c": waits}
        assert got.cost == (sites + waits) * each  # priced at the searches it may run


@pytest.mark.parametrize(("gpus", "sites"), [(2656, 3), (4096, 2), (8, 400)])
def test_a_comparison_whose_searches_now_exceed_the_limit_is_still_refused(gpus: int, sites: int) -> None:
    got = bill(compare(gpus, sites))
    assert sites * search_cost(gpus) > LIMIT
    assert got.refused and got.full == sites * limits.COMPARE_SEARCHES * search_cost(gpus)


def test_the_rest_of_the_operation_is_paid_first_then_the_comparisons_in_order() -> None:
    other = "p: placement(request: {gpus: 4096}) { request }"  # 514
    got = bill(other + " " + compare(1024, 1) + " " + compare(1024, 1).replace("c:", "d:"))
    # 514 + 2 x 130 now = 774; 226 left: one wait search for c (130), none for d.
    assert (got.refused, got.cost, got.wait_searches) == (False, 514 + 130 * 3, {"c": 1, "d": 0})
    refused = bill(other + " " + compare(2048, 2))  # 514 + 2 x 258 now = 1,030
    assert refused.refused
    assert bill(other + " p2: placement(request: {gpus: 4096}) { request }").refused  # no comparison to cut


@pytest.mark.parametrize(
    "args",
    [{"text": "8 bogus=1", "sites": ["a"]}, {"request": {"gpus": 5000}}, {"request": {"gpus": 8}, "text": "8"}],
)
def test_an_unsearched_comparison_is_not_cut(args: dict[str, Any]) -> None:
    assert cost._compare_searches(args, 3) is None


def test_the_price_reads_the_bounds_not_the_service() -> None:
    """cost.py imported WAIT_SEARCHES from graphsvc.sites.service (the store, the engine)."""
    path = Path(cost.__file__)
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert "graphsvc.sites.limits" in imported
    assert not {m for m in imported if m.startswith("graphsvc.sites") and m != "graphsvc.sites.limits"}
    assert wait.needed(0) == 0
