"""The query cost of the fields stop 65 priced by their work, pages priced as their resolvers read
them, and compareSites by the searches it can run (graphsvc/api/graphql/cost.py).

`sites`, `siteLinks`, `costFacts`, `elasticState`, `removeHost` and `leafHosts` cost 1 whatever they
read (10,000 facts took 0.3 s of store time; a 4,096-GPU job's elasticState 57-207 ms). A page asking
`first: 100000` was priced 1,001 and refused, for 500 rows it would never read past. compareSites was
priced one search per site, and a full site ran up to 13. Pure: the price is computed before anything
runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import parse

from graphsvc.api.graphql import cost
from graphsvc.api.graphql.cost import MAX_SITES, field_cost, operation_cost
from graphsvc.paging import MAX_PAGE, page_size
from graphsvc.sites import service as sites_service

FULL = 514  # one 4,096-GPU search


@pytest.mark.parametrize(
    ("name", "args", "sites", "price"),
    [
        ("costFacts", {}, 3, 300),  # one full price file, whatever the catalogue
        ("elasticState", {"id": "r"}, 3, 70),  # the largest job's reservation read
        ("reservation", {"id": "r"}, 3, 70),  # the same read
        ("removeHost", {"name": "h"}, 3, 14),  # one write recounting what the host fed
        ("leafHosts", {"leaf": "l"}, 3, 3),  # a switch cabling a whole cluster's hosts
        ("sites", {}, 0, 1),
        ("sites", {}, 3, 2),  # the multi-site demo
        ("sites", {}, 50, 2),
        ("sites", {}, 51, 3),
        ("sites", {}, MAX_SITES, 21),  # the largest catalogue: 1,000 sites
        ("siteLinks", {}, 0, 1),
        ("siteLinks", {}, 3, 2),  # 3 pairs
        ("siteLinks", {}, 11, 3),  # 55 pairs
        ("siteLinks", {}, 200, 201),  # 19,900 pairs: at most 10,000 links
        ("siteLinks", {}, MAX_SITES, 201),
    ],
)
def test_a_field_priced_1_is_priced_by_what_it_reads(name: str, args: dict[str, Any], sites: int, price: int) -> None:
    assert field_cost(name, args, sites) == price


def test_the_catalogue_reads_are_priced_as_the_largest_catalogue_without_a_count() -> None:
    """An operation priced without the site count (the extension reads it; a caller of
    operation_cost that passes none) prices them as 1,000 sites, never as none."""
    doc = parse("{ sites { name } siteLinks { a } costFacts { key } }")
    assert operation_cost(doc, None, None) == 21 + 201 + 300
    assert operation_cost(doc, None, None, sites=3) == 2 + 2 + 300


def test_fifteen_elastic_states_add_up() -> None:
    query = "{ " + " ".join(f'e{i}: elasticState(id: "r{i}") {{ id }}' for i in range(15)) + " }"
    assert operation_cost(parse(query), None, None) == 15 * 70


# ---- pages: priced as the resolver reads them -------------------------------------------------


@pytest.mark.parametrize("name", sorted(cost.PAGED))
@pytest.mark.parametrize(("first", "rows"), [(100_000, 500), (10**12, 500), (501, 500), (500, 500), (250, 250)])
def test_a_page_is_priced_as_the_rows_its_resolver_reads(name: str, first: int, rows: int) -> None:
    """The resolvers serve min(first, 500) rows (graphsvc.paging.page_size): first: 100000 was
    priced 1,001, over the default limit of 1,000, and refused."""
    assert page_size(first) == rows
    assert field_cost(name, {"first": first}) == 1 + -(-rows // 100)
    field = f"{name}(first: {first})" + (" { id }" if name == "reservations" else " { __typename }")
    assert operation_cost(parse(f"{{ {field} }}"), None, None) == 1 + -(-rows // 100)


def test_the_page_cap_is_the_resolvers() -> None:
    assert MAX_PAGE == 500
    assert page_size(MAX_PAGE + 1) == MAX_PAGE
    assert max(field_cost(name, {"first": 10**9}) for name in cost.PAGED) == 1 + MAX_PAGE // 100


# ---- compareSites: the searches a full site can run -------------------------------------------


def test_compare_sites_is_priced_by_the_searches_a_full_site_can_run() -> None:
    """One search now; for a site too full for the job now, a bisection over at most 12 lease
    expiry times (4 searches; in order it was up to 12): 5 a site, priced as 1 before."""
    assert sites_service.MAX_WAIT_STEPS == 12
    assert sites_service.WAIT_SEARCHES == 4
    assert cost.COMPARE_SEARCHES == 5
    assert field_cost("compareSites", {"request": {"gpus": 64}, "sites": ["a"], "profile": {}}) == 5 * (2 + 8)
    assert field_cost("compareSites", {"text": "8xH100", "profile": {}}, 3) == 3 * 5 * 3  # the demo's 3 sites
    assert field_cost("compareSites", {"text": "4096xH100", "sites": ["a"], "profile": {}}) == 5 * FULL


@pytest.mark.parametrize("expiries", [1, 2, 11, 12, 13, 24, 25, 143, 144, 145, 1000, 20_000])
def test_a_full_site_tries_at_most_12_expiry_times(expiries: int) -> None:
    """The spread of expiry times _after_wait chooses among (its last always among them) is never
    more than MAX_WAIT_STEPS, so the bisection needs at most WAIT_SEARCHES searches."""
    times = list(range(expiries))
    step = max(1, -(-len(times) // sites_service.MAX_WAIT_STEPS))
    probes = [*times[step - 1 :: step]]
    if probes[-1] != times[-1]:
        probes.append(times[-1])
    assert len(probes) <= sites_service.MAX_WAIT_STEPS
    assert len(probes).bit_length() <= sites_service.WAIT_SEARCHES
