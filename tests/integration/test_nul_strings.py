"""A NUL (or another unprintable character) in client text a mutation stores, on both stores.

It reached the store: FalkorDB refused the statement (an untyped GraphQL error, or a REST 422,
and a "query failed" WARNING), Neo4j answered a typed error for some and wrote a cost fact
holding the NUL for others. Now each is one typed ValidationError naming the field, before any
store work, the same on both stores (graphql/inputs.py, the rule of topo_facts UNPRINTABLE).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from graphsvc.sites.catalog import SiteCatalog
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

ANSWER = "__typename ... on ValidationError { field message }"
FACT = {"kind": "carbon", "value": 1.0, "source": "t", "asOf": "2026-01-01", "site": "dc"}


@pytest.fixture
async def cluster(gateway: Gateway) -> Gateway:
    await load(gateway, "sized:gpus=8")
    catalog = SiteCatalog.model_validate(
        {"sites": [{"name": "dc", "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": ["default"]}]}
    )
    await put_sites(gateway, catalog, 1.0)
    return gateway


async def answer(client: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = resp.json()
    assert resp.status_code == 200 and "errors" not in body, body
    (result,) = body["data"].values()
    out: dict[str, Any] = result
    return out


CASES = [
    ("reserve", 'mutation($s: String!) { reserve(input: {holder: "h", gpus: [$s]}) { ANSWER } }', "gpus"),
    ("reserve", 'mutation($s: String!) { reserve(input: {holder: "h", gpus: [], labels: [$s]}) { ANSWER } }', "labels"),
    ("setPhases", 'mutation($s: String!) { setPhases(id: $s, phase: "a", phases: ["a=1"]) { ANSWER } }', "id"),
    ("setPhases", 'mutation($s: String!) { setPhases(id: "r", phase: "a", phases: [$s]) { ANSWER } }', "phases"),
    ("renew", "mutation($s: String!) { renew(id: $s) { ANSWER } }", "id"),
    ("resize", 'mutation($s: String!) { resize(id: "r", remove: [$s]) { ANSWER } }', "remove"),
    ("preempt", "mutation($s: String!) { preempt(input: {holder: $s, request: {gpus: 1}, priority: 1}) { ANSWER } }",
     "holder"),
]  # fmt: skip


async def test_unprintable_mutation_text_is_a_typed_error_naming_the_field(
    client: httpx.AsyncClient, cluster: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts = {"\x00": "'\\x00' at position 4", "\x1b": "'\\x1b' at position 4", "\u202e": "'\\u202e' at position 4"}
    for _, query, field in CASES:
        for char, where in texts.items():
            got = await answer(client, query.replace("ANSWER", ANSWER), {"s": f"GPU-{char}x"})
            assert (got["__typename"], got["field"]) == ("ValidationError", field), (query, got)
            assert "no control characters, line breaks or bidi controls" in got["message"] and where in got["message"]
    assert not [r for r in caplog.records if r.name == "graphsvc.store"], "sent to the store"


@pytest.mark.parametrize("field", ["source", "site", "note"])
async def test_a_cost_fact_with_a_nul_is_refused_and_not_written(
    client: httpx.AsyncClient, cluster: Gateway, caplog: pytest.LogCaptureFixture, field: str
) -> None:
    caplog.set_level(logging.DEBUG)
    query = "mutation($f: CostFactInput!) { setCostFact(fact: $f) { ANSWER } }".replace("ANSWER", ANSWER)
    got = await answer(client, query, {"f": {**FACT, field: "a\x00b"}})
    assert (got["__typename"], got["field"]) == ("ValidationError", field), got
    assert not [r for r in caplog.records if r.name == "graphsvc.store"], "sent to the store"
    facts = (await client.post("/graphql", json={"query": "{ costFacts { key } }"})).json()["data"]["costFacts"]
    assert facts == []
    written = await answer(client, query, {"f": FACT})  # the same fact, printable, is written
    assert written["__typename"] == "CostFactsWritten", written


async def test_rest_reserve_with_a_nul_gpu_is_a_typed_outcome(client: httpx.AsyncClient, cluster: Gateway) -> None:
    resp = await client.post("/v1/reservations", json={"holder": "h", "gpus": ["GPU-\x00"]})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["kind"], resp.json()["field"]) == ("ValidationError", "gpus"), resp.text


async def test_rest_prices_and_sites_with_a_nul_are_a_422_naming_the_field(
    client: httpx.AsyncClient, cluster: Gateway
) -> None:
    fact = {"kind": "egress", "value": 0.05, "source": "net\x00", "as_of": "2026-01-01", "site": "dc"}
    resp = await client.put("/v1/prices", json={"catalog": "t", "fact": [fact]})
    assert resp.status_code == 422, resp.text
    assert [f["field"] for f in resp.json()["fields"]] == ["fact.source"], resp.text
    site = {"name": "dc", "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": ["default"], "location": "a\x00"}
    resp = await client.put("/v1/sites", json={"sites": [site]})
    assert resp.status_code == 422, resp.text
    assert [f["field"] for f in resp.json()["fields"]] == ["sites.location"], resp.text
    facts = (await client.post("/graphql", json={"query": "{ costFacts { key } }"})).json()["data"]["costFacts"]
    assert facts == []
