"""compareSites over the cost limit, through the app on both stores: a comparison whose full price
(5 searches a site) is over the limit runs its searches now and the wait searches the limit pays
for, and no more; its wait is then an upper bound of the full search's, inside the range it
reports, and marked (waitCoarse, waitFromHours, waitReason). Over the limit even with no wait
search: refused before any search. Searches are counted by a spy on PlacementEngine.place.

Before: any comparison priced over the limit was refused (3 sites above 512 GPUs, one above 1,584
under the default 1,000).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from graphql import parse

from graphsvc.api.app import create_app
from graphsvc.api.graphql.cost import charge, keyed_fields, search_cost
from graphsvc.placement.engine import PlacementEngine
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.settings import Settings
from graphsvc.sites.catalog import SiteCatalog, SiteIn
from graphsvc.sites.model import CapacityKind, SiteKind
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_pcie_hosts, add_spines
from graphsvc.synthetic.hosts import l40s
from tests.cluster_helpers import load

LEASE_S = 600
HOSTS = 12
QUERY = """query($gpus: Int!, $sites: [String!]) {
  c: compareSites(request: {gpus: $gpus}, profile: {gpuHours: 1}, sites: $sites) {
    __typename ... on ValidationError { field message }
    ... on SiteComparison { sites { site fits gpus waitHours waitCoarse waitFromHours waitReason reason } } } }"""


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per placement search the engine runs."""
    calls: list[int] = []
    original = PlacementEngine.place

    async def counted(self: PlacementEngine, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(PlacementEngine, "place", counted)
    return calls


async def _full_sites(gateway: Gateway, names: list[str]) -> list[SyntheticCluster]:
    """Per name a site of twelve L40S hosts, each held by its own lease, the leases ending LEASE_S
    apart (a site's i-th host free after (i + 1) x LEASE_S)."""
    clusters, service = [], ReservationService(gateway)
    for name in names:
        cluster = SyntheticCluster(f"{name}-c")  # hosts and switches named after the site: names of their own
        leaves = add_pcie_hosts(cluster, l40s, HOSTS, seed=7, prefix="l40s" if name == "dc" else f"{name}-l40s")
        add_spines(cluster, leaves, prefix=f"{name}-l40s", sus=1)
        await load(gateway, cluster)
        for i, host in enumerate(cluster.hosts):
            held = await service.reserve(
                holder=f"{name}-{i}", gpus=[g.uuid for g in host.gpus], ttl_s=LEASE_S * (i + 1)
            )
            assert isinstance(held, Reservation), held
        clusters.append(cluster)
    sites = [
        SiteIn(name=n, kind=SiteKind.ON_PREM, capacity_kinds=[CapacityKind.OWNED], clusters=[c.name])
        for n, c in zip(names, clusters, strict=True)
    ]
    await put_sites(gateway, SiteCatalog(sites=sites), time.time())
    return clusters


async def _ask(gateway: Gateway, limit: int, variables: dict[str, Any]) -> dict[str, Any]:
    app: FastAPI = create_app(Settings(insecure_dev=True, graphql_max_cost=limit), gateway=gateway)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.post("/graphql", json={"query": QUERY, "variables": variables})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _charged(limit: int, variables: dict[str, Any], sites: int) -> int:
    """What the cost limit charges the query (the price it runs at)."""
    bill = charge(keyed_fields(parse(QUERY), None, variables), sites, limit)
    assert not bill.refused
    return bill.cost


@pytest.mark.parametrize("allowed", [0, 1, 2, 3])
@pytest.mark.parametrize("hosts_needed", [1, 5, 7, 12, 13])
async def test_a_coarse_wait_bounds_the_full_searchs_wait(
    gateway: Gateway, searches: list[int], hosts_needed: int, allowed: int
) -> None:
    """One full site; the limit pays for the search now and `allowed` wait searches (the full
    search needs 4). 13 hosts: more than the site has, it never fits."""
    [cluster] = await _full_sites(gateway, ["dc"])
    per_host = len(cluster.hosts[0].gpus)
    gpus = hosts_needed * per_host
    each = search_cost(gpus)
    variables = {"gpus": gpus, "sites": ["dc"]}

    searches.clear()
    full = (await _ask(gateway, 1000, variables))["data"]["c"]["sites"][0]
    assert not full["waitCoarse"] and full["waitReason"] is None, full
    full_searches = len(searches)

    limit = (1 + allowed) * each
    searches.clear()
    body = await _ask(gateway, limit, variables)
    assert "errors" not in body, body
    [dc] = body["data"]["c"]["sites"]
    assert _charged(limit, variables, 1) == limit
    if hosts_needed > HOSTS:
        assert not full["fits"] and not dc["fits"], dc
        if allowed:  # "never fits" is exact: the last expiry says so, and the search stops there
            assert len(searches) == 2 and not dc["waitCoarse"] and dc["waitReason"] is None, dc
        else:
            assert len(searches) == 1 and dc["waitCoarse"] and "not searched" in dc["reason"], dc
        return
    assert full["fits"] and full["waitFromHours"] == full["waitHours"], str((full, dc))
    exact = leases(full["waitHours"])  # the full search's (>= hosts_needed: the placement's own rules)
    assert hosts_needed <= exact <= HOSTS
    # The price is the searches run: a coarse search uses all it was paid for.
    assert len(searches) * each == limit and len(searches) == 1 + allowed <= full_searches
    if allowed == 0:
        assert not dc["fits"] and dc["waitCoarse"] and dc["waitHours"] is None, dc
        assert "not searched" in dc["reason"] and "paid for 0 of the 4 wait searches" in dc["waitReason"], dc
        return
    assert dc["fits"] and dc["gpus"] == gpus, dc
    # An upper bound of the full search's wait, which lies in the range it reports.
    assert leases(dc["waitFromHours"]) <= exact <= leases(dc["waitHours"]), dc
    # Coarse unless its searches happened to pin the expiry: then its range is one point.
    assert dc["waitCoarse"] == (dc["waitFromHours"] != dc["waitHours"]), dc
    if dc["waitCoarse"]:
        assert f"paid for {allowed} of the 4 wait searches" in dc["waitReason"], dc


def leases(hours: float) -> int:
    """The leases run out after `hours` (the i-th ends i x LEASE_S after the setup): the test's
    own seconds between setup and query are far below a lease's LEASE_S."""
    return round(hours * 3600 / LEASE_S)


async def test_the_wait_searches_are_shared_among_the_full_sites(gateway: Gateway, searches: list[int]) -> None:
    """Three full sites, a 96-GPU job (8 hosts of each): the limit pays for 3 searches now and 5 of
    the 12 wait searches: 2, 2 and 1, each site's wait an upper bound, marked."""
    clusters = await _full_sites(gateway, ["a", "b", "c"])
    gpus = 8 * len(clusters[0].hosts[0].gpus)
    each = search_cost(gpus)
    variables = {"gpus": gpus, "sites": ["a", "b", "c"]}
    limit = (3 + 5) * each
    searches.clear()
    body = await _ask(gateway, limit, variables)
    assert "errors" not in body, body
    assert len(searches) * each == _charged(limit, variables, 3) == limit
    by_site = {s["site"]: s for s in body["data"]["c"]["sites"]}
    for name, given in (("a", 2), ("b", 2), ("c", 1)):
        s = by_site[name]
        assert s["fits"] and leases(s["waitFromHours"]) <= 8 <= leases(s["waitHours"]), s
        assert s["waitCoarse"] == (s["waitFromHours"] != s["waitHours"]), s
        if s["waitCoarse"]:
            assert f"paid for {given} of the 4" in s["waitReason"], s


async def test_searches_now_over_the_limit_are_refused_before_any_search(gateway: Gateway, searches: list[int]) -> None:
    clusters = await _full_sites(gateway, ["a", "b"])
    gpus = len(clusters[0].hosts[0].gpus) * 4
    each = search_cost(gpus)
    searches.clear()
    body = await _ask(gateway, 2 * each - 1, {"gpus": gpus, "sites": ["a", "b"]})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_EXPENSIVE", body
    assert error["extensions"]["cost"] == 2 * 5 * each  # its full price, as before
    assert searches == []
