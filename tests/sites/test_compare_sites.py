"""Acceptance: compareSites on the multi-site demo, its numbers recomputed by hand (both stores).

The demo: onprem-dc1 (DGX H100 SuperPOD, owned, $1.90/GPU-h), aws-us-east-1 (p5-like H100,
on-demand $12.29/GPU-h, spot without a price), neocloud-se1 (GB200 NVL72, on-demand $10.50 and
reserved $7.35/GPU-h, speed 2.5x H100). Links: dc1-aws 12.5 GB/s, dc1-se1 12.5 GB/s, aws-se1 25 GB/s.
Egress: dc1 $0.01/GB, aws $0.09/GB. The job: 64 GPUs, 6400 H100 GPU-hours, 20% communication
measured at 50 GB/s per GPU, a 1 PB dataset.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.sites.catalog import EXAMPLE_PRICES, load_price_file
from graphsvc.sites.store import put_facts, put_sites
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic import multisite
from tests.cluster_helpers import load

COMPARE = """
query($profile: JobProfileInput!, $objective: SiteObjective!, $deadline: Float, $age: Float!) {
  compareSites(request: {gpus: 64}, profile: $profile, objective: $objective, deadlineHours: $deadline,
               maxFactAgeDays: $age) {
    __typename
    ... on ValidationError { field message }
    ... on SiteComparison {
      choice
      sites { rank site capacity fits gpus model hosts waitHours bottleneckGbps speed runHours transferHours totalHours
              computeCost transferCost totalCost powerW powerSource energyKWh carbonKg meetsDeadline complete
              missing stale reason }
    }
  }
}
"""
DATASET_GB = 1_000_000.0
PROFILE = {"gpuHours": 6400.0, "commShare": 0.2, "referenceModel": "H100", "datasetGB": DATASET_GB}
PUE = {"onprem-dc1": 1.58, "aws-us-east-1": 1.15, "neocloud-se1": 1.2}


async def _demo(gw: Gateway) -> None:
    for cluster in multisite.clusters():
        await load(gw, cluster)
    await put_sites(gw, multisite.catalog(), 1.0)
    await put_facts(gw, load_price_file(EXAMPLE_PRICES).all_facts(), 1.0)


async def _compare(client: httpx.AsyncClient, data_site: str, objective: str = "CHEAPEST",
                   deadline: float | None = None, age: float = 36500.0) -> dict[str, Any]:  # fmt: skip
    variables = {
        "profile": {**PROFILE, "dataSite": data_site},
        "objective": objective,
        "deadline": deadline,
        "age": age,
    }
    body = (await client.post("/graphql", json={"query": COMPARE, "variables": variables})).json()
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["compareSites"]
    assert result["__typename"] == "SiteComparison", result
    return result


def _by_site(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["site"]: s for s in result["sites"]}


def _hand(bw: float, speed: float, price: float, transfer_h: float, transfer_usd: float) -> tuple[float, float]:
    """Hours and USD: 6400/64 * ((1 - 0.2)/speed + 0.2 * 50/bw) hours, times 64 GPUs at the price."""
    run = 6400 / 64 * (0.8 / speed + 0.2 * 50 / bw)
    return run + transfer_h, run * 64 * price + transfer_usd


async def test_compare_sites_per_site_numbers_by_hand(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await _demo(gateway)
    result = await _compare(client, "onprem-dc1")
    sites = _by_site(result)
    assert set(sites) == {"onprem-dc1", "aws-us-east-1", "neocloud-se1"}
    dc, aws, neo = sites["onprem-dc1"], sites["aws-us-east-1"], sites["neocloud-se1"]
    for s in (dc, aws, neo):
        assert s["fits"] and s["gpus"] == 64
    # H100 sites: 8 whole DGX H100 hosts, one 400 Gb/s NIC per GPU = 50 GB/s between hosts.
    assert dc["bottleneckGbps"] == aws["bottleneckGbps"] == 50.0
    assert all(h.startswith("dc1-") for h in dc["hosts"]) and all(h.startswith("use1-") for h in aws["hosts"])
    assert all(h.startswith("se1-") for h in neo["hosts"])
    # On-prem, data here: 100 h at $1.90 = $12,160.
    assert (dc["totalHours"], dc["totalCost"]) == pytest.approx(_hand(50.0, 1.0, 1.90, 0.0, 0.0))
    assert (dc["totalHours"], dc["totalCost"]) == pytest.approx((100.0, 12_160.0))
    # AWS on demand (spot has no price: named missing), 1 PB over 12.5 GB/s = 22.2 h, $0.01/GB out of dc1.
    move_h = DATASET_GB / 12.5 / 3600
    assert aws["capacity"] == "on-demand"
    assert (aws["totalHours"], aws["totalCost"]) == pytest.approx(_hand(50.0, 1.0, 12.29, move_h, 10_000.0))
    assert (aws["transferHours"], aws["transferCost"]) == pytest.approx((move_h, 10_000.0))
    assert "GPU-hour price of NVIDIA H100 80GB HBM3 (spot) at aws-us-east-1" in aws["missing"]
    # GB200: 64 GPUs in one NVL72 domain, 2.5x an H100; reserved ($7.35) is cheaper than on demand.
    assert neo["model"] == "NVIDIA GB200" and neo["speed"] == 2.5 and neo["capacity"] == "reserved"
    assert neo["bottleneckGbps"] > 50.0
    expect = _hand(neo["bottleneckGbps"], 2.5, 7.35, move_h, 10_000.0)
    assert (neo["totalHours"], neo["totalCost"]) == pytest.approx(expect)
    # Energy and carbon: GPUs x watts (measured under load, or TDP) x hours x the site's PUE.
    for s in (dc, aws, neo):
        assert s["energyKWh"] == pytest.approx(64 * s["powerW"] * s["runHours"] / 1000 * PUE[s["site"]])
    assert result["choice"] == "onprem-dc1"
    assert [s["site"] for s in result["sites"]] == ["onprem-dc1", "neocloud-se1", "aws-us-east-1"]


async def test_the_choice_follows_the_data_and_the_deadline(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await _demo(gateway)
    # Data on-prem: on-prem is cheapest. Data in AWS: moving 1 PB out costs $90,000, so AWS is.
    assert (await _compare(client, "onprem-dc1"))["choice"] == "onprem-dc1"
    in_aws = await _compare(client, "aws-us-east-1")
    assert in_aws["choice"] == "aws-us-east-1"
    sites = _by_site(in_aws)
    assert sites["onprem-dc1"]["totalCost"] == pytest.approx(12_160.0 + 90_000.0)
    assert sites["aws-us-east-1"]["totalCost"] == pytest.approx(78_656.0)
    assert sites["neocloud-se1"]["transferHours"] == pytest.approx(DATASET_GB / 25.0 / 3600)  # the aws-se1 link
    # The deadline: 150 h lets on-prem (100 h) win on cost; 60 h needs the GB200s (about 55 h with the move).
    assert (await _compare(client, "onprem-dc1", "CHEAPEST_UNDER_DEADLINE", 150.0))["choice"] == "onprem-dc1"
    tight = await _compare(client, "onprem-dc1", "CHEAPEST_UNDER_DEADLINE", 60.0)
    assert tight["choice"] == "neocloud-se1"
    late = _by_site(tight)["onprem-dc1"]
    assert late["meetsDeadline"] is False and late["reason"].startswith("misses the deadline")
    assert (await _compare(client, "onprem-dc1", "FASTEST"))["choice"] == "neocloud-se1"
    assert (await _compare(client, "onprem-dc1", "LOWEST_CARBON"))["choice"] == "neocloud-se1"
    # Nothing meets 10 h: no choice, and every site says why.
    none = await _compare(client, "onprem-dc1", "CHEAPEST_UNDER_DEADLINE", 10.0)
    assert none["choice"] is None and all(s["reason"] for s in none["sites"])


async def test_missing_and_stale_prices_are_named(gateway: Gateway, client: httpx.AsyncClient) -> None:
    for cluster in multisite.clusters():
        await load(gateway, cluster)
    await put_sites(gateway, multisite.catalog(), 1.0)
    # No prices at all: every cost is null (never 0) and the missing facts are named.
    bare = await _compare(client, "onprem-dc1")
    assert bare["choice"] is None
    for s in bare["sites"]:
        assert s["totalCost"] is None and s["computeCost"] is None and not s["complete"]
        assert any(m.startswith("GPU-hour price of") for m in s["missing"]), s
    await put_facts(gateway, load_price_file(EXAMPLE_PRICES).all_facts(), 1.0)
    # With the default age limit (365 days) the 2025 list prices are used, and named stale.
    fresh = await _compare(client, "onprem-dc1", age=365.0)
    aws = _by_site(fresh)["aws-us-east-1"]
    assert aws["totalCost"] is not None
    assert any(
        s.startswith("GPU-hour price of H100 (on-demand) at aws-us-east-1 as of 2025-01-15") for s in aws["stale"]
    )


async def test_operators_update_a_price_and_an_older_one_does_not_win(
    gateway: Gateway, client: httpx.AsyncClient
) -> None:
    await _demo(gateway)
    mutation = """mutation($fact: CostFactInput!) { setCostFact(fact: $fact) {
      __typename ... on CostFactsWritten { written keptNewer } ... on ValidationError { field message } } }"""
    newer = {"kind": "gpu-hour", "value": 2.50, "source": "operator:finance", "asOf": "2026-11-01",
             "site": "onprem-dc1", "model": "H100", "capacity": "owned"}  # fmt: skip
    body = (await client.post("/graphql", json={"query": mutation, "variables": {"fact": newer}})).json()
    assert body["data"]["setCostFact"] == {
        "__typename": "CostFactsWritten",
        "written": ["gpu-hour|onprem-dc1|H100|owned"],
        "keptNewer": [],
    }
    older = {**newer, "value": 0.5, "asOf": "2020-01-01"}
    body = (await client.post("/graphql", json={"query": mutation, "variables": {"fact": older}})).json()
    assert body["data"]["setCostFact"]["keptNewer"] == ["gpu-hour|onprem-dc1|H100|owned"]
    dc = _by_site(await _compare(client, "onprem-dc1"))["onprem-dc1"]
    assert dc["totalCost"] == pytest.approx(100 * 64 * 2.50)
    # A fact dated ahead would win over every correction until that day (a probe's case).
    ahead = {**newer, "value": 9.0, "asOf": "2099-01-01"}
    body = (await client.post("/graphql", json={"query": mutation, "variables": {"fact": ahead}})).json()
    assert body["data"]["setCostFact"]["__typename"] == "ValidationError", body
    assert "in the future" in body["data"]["setCostFact"]["message"]
    bad = {**newer, "kind": "gpu-hour", "capacity": None}
    body = (await client.post("/graphql", json={"query": mutation, "variables": {"fact": bad}})).json()
    assert body["data"]["setCostFact"]["__typename"] == "ValidationError"
    # A price file over REST: the same rule, fact by fact.
    egress = {
        "kind": "egress",
        "value": 0.05,
        "source": "operator:network",
        "as_of": "2026-11-02",
        "site": "onprem-dc1",
    }
    resp = await client.put("/v1/prices", json={"catalog": "t1", "fact": [egress]})
    assert resp.json() == {"catalog": "t1", "written": ["egress|onprem-dc1||"], "kept_newer": []}
    resp = await client.put("/v1/prices", json={"catalog": "t0", "fact": [{**egress, "as_of": "2019-01-01"}]})
    assert resp.json() == {"catalog": "t0", "written": [], "kept_newer": ["egress|onprem-dc1||"]}
    resp = await client.put("/v1/prices", json={"catalog": "t2", "fact": [{**egress, "as_of": "soon"}]})
    assert resp.status_code == 422 and "not a date" in resp.text


async def test_a_full_site_is_offered_after_its_predicted_wait(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await _demo(gateway)
    service = ReservationService(gateway)
    held = await service.reserve(holder="big-job", request=parse_request("200 per-host=8 site=onprem-dc1"), ttl_s=7200)
    assert isinstance(held, Reservation)
    dc = _by_site(await _compare(client, "onprem-dc1"))["onprem-dc1"]
    # 48 GPUs are free now; the 200 held come back when the 2 h lease runs out (a lower bound).
    assert dc["fits"] and dc["waitHours"] == pytest.approx(2.0, abs=0.05)
    assert dc["totalHours"] == pytest.approx(dc["waitHours"] + 100.0)
    assert dc["totalCost"] == pytest.approx(12_160.0)
