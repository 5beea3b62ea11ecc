"""Request faults an adversarial trial found, through the app on both stores (docs/placement.md).

An unknown site was reported as a model problem; a NUL in an excluded host name reserved on
Neo4j and was an untyped 422 on FalkorDB; `mem>=80` ruled out the "80 GB" H100 without saying
what there was; a repeated option silently took the last value; `preemptionPlan` took any
priority while `reserve` takes -1000..1000.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.sites.catalog import SiteCatalog
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

PLACE = """query($r: PlacementRequestInput!) { placement(request: $r) {
  candidates { score } infeasible { constraint message nearestFeasible } } }"""
RESERVE = """mutation($r: PlacementRequestInput!, $p: Int!) { reserve(input: {holder: "t", request: $r, priority: $p}) {
  __typename ... on ValidationError { field message } } }"""
PLAN = """query($r: PlacementRequestInput!, $p: Int!) { preemptionPlan(request: $r, priority: $p) {
  __typename ... on ValidationError { field message } ... on PreemptionPlan { feasible } } }"""


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def place(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    resp = await client.post("/v1/place", json={"request": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def reasons(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["constraint"]: r for r in answer["infeasible"]}


@pytest.fixture
async def h100(gateway: Gateway) -> Gateway:
    """Two HGX H100 hosts (81,559 MiB a GPU) in site `dc`; site `cloud` owns no cluster."""
    await load(gateway, "sized:gpus=16")
    catalog = SiteCatalog.model_validate(
        {
            "sites": [
                {"name": "dc", "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": ["default"]},
                {"name": "cloud", "kind": "cloud-region", "capacity_kinds": ["on-demand"]},
            ]
        }
    )
    await put_sites(gateway, catalog, 1.0)
    return gateway


async def test_an_unknown_site_is_named_not_the_model(client: httpx.AsyncClient, h100: Gateway) -> None:
    rest = reasons(await place(client, "8xH100 site=nowhere"))
    assert set(rest) == {"sites"}
    assert rest["sites"]["message"] == "no site named 'nowhere' is known; known sites: cloud, dc"
    assert rest["sites"]["nearestFeasible"] == "8xH100"
    graphql = (await gql(client, PLACE, {"r": {"gpus": 8, "model": "H100", "sites": ["nowhere"]}}))["placement"]
    assert [r["constraint"] for r in graphql["infeasible"]] == ["sites"]
    assert "'nowhere'" in graphql["infeasible"][0]["message"]
    partly = reasons(await place(client, "8xH100 site=nowhere,dc nvlink=full-mesh ib-hops<=0 limit=1"))
    assert partly == {}  # a known site that fits: candidates, no reason


async def test_a_known_site_without_room_says_so(client: httpx.AsyncClient, h100: Gateway) -> None:
    by = reasons(await place(client, "8xH100 site=cloud"))
    assert by["sites"]["message"] == "nothing fits in site cloud; without the site filter it does"
    assert by["sites"]["nearestFeasible"] == "8xH100"
    assert "model" not in by
    assert (await place(client, "8xH100 site=dc"))["candidates"]


@pytest.mark.parametrize("name", ["a\x00b", "node\x1b[31m", "n\u202e1"])
async def test_an_unprintable_host_name_is_a_typed_error_on_both_stores(
    client: httpx.AsyncClient, h100: Gateway, name: str
) -> None:
    rest = await place(client, f"8xH100 exclude={name}")
    assert [r["constraint"] for r in rest["infeasible"]] == ["excludeHosts"] and not rest["candidates"]
    reserved = await client.post("/v1/reservations", json={"holder": "t", "request": f"8xH100 exclude={name}"})
    assert reserved.status_code == 200, reserved.text
    assert (reserved.json()["kind"], reserved.json()["field"]) == ("ValidationError", "excludeHosts")
    for field, value in (("excludeHosts", [name]), ("sites", [name])):
        request = {"gpus": 8, "model": "H100", field: value}
        answer = (await gql(client, PLACE, {"r": request}))["placement"]
        assert [r["constraint"] for r in answer["infeasible"]] == [field]
        refused = (await gql(client, RESERVE, {"r": request, "p": 0}))["reserve"]
        assert (refused["__typename"], refused["field"]) == ("ValidationError", field)
    preferred = {"gpus": 8, "model": "H100", "preferences": {"hosts": [name]}}
    refused = (await gql(client, RESERVE, {"r": preferred, "p": 0}))["reserve"]
    assert (refused["__typename"], refused["field"]) == ("ValidationError", "preferences.hosts")


async def test_the_memory_reason_names_the_largest_gpu(client: httpx.AsyncClient, h100: Gateway) -> None:
    by = reasons(await place(client, "8xH100 mem>=80"))
    assert by["minMemoryGiB"]["message"] == (
        "nothing fits with the memory minimum (80 GiB): the largest H100 that meets the other constraints has "
        "79.6 GiB (NVIDIA H100 80GB HBM3, 81559 MiB)"
    )
    assert by["minMemoryGiB"]["nearestFeasible"] == "8xH100 mem>=79.6"
    assert (await place(client, "8xH100 mem>=79.6"))["candidates"]
    assert (await place(client, "8xH100 mem>=79"))["candidates"]


async def test_a_repeated_option_is_refused(client: httpx.AsyncClient, h100: Gateway) -> None:
    query = "query($t: String!) { placementText(text: $t) { request infeasible { constraint message } } }"
    answer = (await gql(client, query, {"t": "8xH100 nvlink=full-mesh nvlink=none"}))["placementText"]
    assert answer["infeasible"] == [
        {"constraint": "text", "message": "'nvlink=none': nvlink given twice; give each option once"}
    ]


@pytest.mark.parametrize("priority", [99_999_999, 1001, -1001, -(2**31)])
async def test_a_plan_takes_the_priorities_reserve_takes(
    client: httpx.AsyncClient, h100: Gateway, priority: int
) -> None:
    request = {"gpus": 8, "model": "H100"}
    plan = (await gql(client, PLAN, {"r": request, "p": priority}))["preemptionPlan"]
    reserve = (await gql(client, RESERVE, {"r": request, "p": priority}))["reserve"]
    assert plan == reserve == {
        "__typename": "ValidationError", "field": "priority", "message": "must be between -1000 and 1000"
    }  # fmt: skip
    for bound in (-1000, 1000):
        assert (await gql(client, PLAN, {"r": request, "p": bound}))["preemptionPlan"]["__typename"] == "PreemptionPlan"


async def test_first_below_one_is_an_empty_page_for_every_paged_field(client: httpx.AsyncClient, h100: Gateway) -> None:
    """`first` below 1 was clamped to a page of 1 (a probe asked for none and got one); every paged
    field now answers an empty page (graphsvc.paging.page_size), which says no more follow: it said
    `hasNextPage: true` with no cursor, and a client following it asked again forever (stop 62)."""
    made = (await gql(client, RESERVE, {"r": {"gpus": 1, "model": "H100"}, "p": 0}))["reserve"]
    assert made["__typename"] == "Reservation"
    for first in (0, -1, -100):
        variables = {"f": first}
        hosts = await gql(
            client, "query($f: Int!) { hosts(first: $f) { nodes { name } pageInfo { hasNextPage } } }", variables
        )
        assert hosts["hosts"] == {"nodes": [], "pageInfo": {"hasNextPage": False}}
        gpus = await gql(client, "query($f: Int!) { gpus(first: $f) { nodes { uuid } } }", variables)
        held = await gql(client, "query($f: Int!) { reservations(first: $f) { id } }", variables)
        found = await gql(client, 'query($f: Int!) { search(text: "h100", first: $f) { name } }', variables)
        assert gpus["gpus"]["nodes"] == held["reservations"] == found["search"] == []
    one = await gql(client, "query($f: Int!) { hosts(first: $f) { nodes { name } } }", {"f": 1})
    assert len(one["hosts"]["nodes"]) == 1
