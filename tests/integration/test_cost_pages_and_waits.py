"""What the query cost assumes of the resolvers, on both stores: a page asked for more than 500 rows
is served 500, never refused (so it is priced as 500); a full site in compareSites runs at most
1 + WAIT_SEARCHES placement searches (as priced), and finds the wait the scan in order found.

`hosts(first: 100000)` was priced 1,001 and refused under the default limit of 1,000, for rows the
resolver never reads. compareSites was priced one search per site while a full site ran up to 13:
one now, then one per lease expiry time tried, in order.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from graphsvc.placement.engine import PlacementEngine
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.sites import service as sites_service
from graphsvc.sites.catalog import SiteCatalog, SiteIn
from graphsvc.sites.model import CapacityKind, SiteKind
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> Any:
    resp = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body, body
    return body["data"]


async def test_a_page_asked_past_its_cap_is_served_not_refused(client: httpx.AsyncClient, gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=3")
    gpus = [g.uuid for h in cluster.hosts for g in h.gpus]
    held = await gql(client, 'mutation($g: [String!]) { reserve(input: {holder: "j", gpus: $g}) { __typename } }',
                     {"g": gpus[:2]})  # fmt: skip
    assert held["reserve"]["__typename"] == "Reservation"
    query = """{ hosts(first: 100000) { nodes { name } }
                 gpus(first: 100000) { nodes { uuid } }
                 reservations(first: 100000) { id }
                 fabric(first: 100000) { switches { name } } }"""
    data = await gql(client, query)  # priced 4 x 6 = 24, not 4 x 1,001
    assert sorted(n["name"] for n in data["hosts"]["nodes"]) == sorted(h.hostname for h in cluster.hosts)
    assert sorted(n["uuid"] for n in data["gpus"]["nodes"]) == sorted(gpus)
    assert len(data["reservations"]) == 1
    assert sorted(s["name"] for s in data["fabric"]["switches"]) == sorted(s.name for s in cluster.switches)


COMPARE = """query($gpus: Int!) { compareSites(request: {gpus: $gpus}, profile: {gpuHours: 1}) {
  __typename ... on ValidationError { field message }
  ... on SiteComparison { sites { site fits gpus waitHours reason } } } }"""
LEASE_S = 600


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """One entry per placement search the engine runs."""
    calls: list[float] = []
    original = PlacementEngine.place

    async def counted(self: PlacementEngine, *args: Any, **kwargs: Any) -> Any:
        calls.append(time.time())
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(PlacementEngine, "place", counted)
    return calls


async def _full_site(gateway: Gateway) -> SyntheticCluster:
    """One site of twelve L40S hosts, each held by its own lease, the leases ending LEASE_S apart."""
    cluster = await load(gateway, "l40s:hosts=12")
    site = SiteIn(name="dc", kind=SiteKind.ON_PREM, capacity_kinds=[CapacityKind.OWNED], clusters=[cluster.name])
    await put_sites(gateway, SiteCatalog(sites=[site]), time.time())
    service = ReservationService(gateway)
    for i, host in enumerate(cluster.hosts):
        held = await service.reserve(holder=f"job-{i}", gpus=[g.uuid for g in host.gpus], ttl_s=LEASE_S * (i + 1))
        assert isinstance(held, Reservation), held
    return cluster


@pytest.mark.parametrize("hosts_needed", [12, 7, 1])
async def test_a_full_site_is_searched_at_most_five_times(
    client: httpx.AsyncClient, gateway: Gateway, searches: list[float], hosts_needed: int
) -> None:
    """Twelve hosts, each held by its own lease, ending 10 minutes apart: the job fits once
    `hosts_needed` leases have run out. In order, a job of the whole site took 13 searches."""
    cluster = await _full_site(gateway)
    per_host = len(cluster.hosts[0].gpus)

    searches.clear()
    result = (await gql(client, COMPARE, {"gpus": hosts_needed * per_host}))["compareSites"]
    assert result["__typename"] == "SiteComparison", result
    [dc] = result["sites"]
    assert dc["fits"] and dc["gpus"] == hosts_needed * per_host, dc
    # The first expiry after which it fits, as the scan in order found it (a lower bound).
    assert dc["waitHours"] == pytest.approx(hosts_needed * LEASE_S / 3600, abs=0.02)
    assert sites_service.MAX_WAIT_STEPS == 12
    assert len(searches) <= 5  # one now, then a bisection over 12 expiry times (WAIT_SEARCHES)


async def test_a_site_the_job_never_fits_is_searched_at_most_five_times(
    client: httpx.AsyncClient, gateway: Gateway, searches: list[float]
) -> None:
    cluster = await _full_site(gateway)
    gpus = sum(len(h.gpus) for h in cluster.hosts)

    searches.clear()
    result = (await gql(client, COMPARE, {"gpus": gpus + 1}))["compareSites"]
    [dc] = result["sites"]
    assert not dc["fits"] and "now or as leases run out" in dc["reason"], dc
    assert len(searches) <= 5
