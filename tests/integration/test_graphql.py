"""The GraphQL API on the real embedded store: browsing, placement, limits, masking, schema drift."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphsvc.api.graphql.schema import schema
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

ROOT = Path(__file__).resolve().parents[2]

ISSUE_SELECTION = """
{ placement(request: {gpus: 8, model: "H100", nvlink: FULL_MESH, maxIbHops: 1}) {
  candidates { gpus { uuid index host { name } } score reason asOf }
  infeasible { constraint message } } }
"""


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.fixture
async def demo(gateway: Gateway) -> Gateway:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    return gateway


def test_schema_file_has_not_drifted() -> None:
    committed = (ROOT / "schema.graphql").read_text()
    assert committed == schema.as_str() + "\n", "run: graphsvc export-schema schema.graphql"


async def test_issue_selection_works_as_written(client: httpx.AsyncClient, demo: Gateway) -> None:
    body = await gql(client, ISSUE_SELECTION)
    assert "errors" not in body
    result = body["data"]["placement"]
    assert result["infeasible"] == []
    first = result["candidates"][0]
    assert len(first["gpus"]) == 8 and len({g["host"]["name"] for g in first["gpus"]}) == 1
    assert first["score"] > 0 and "NVLink" in first["reason"] and first["asOf"] >= 0


async def test_text_form_and_infeasible_reasons(client: httpx.AsyncClient, demo: Gateway) -> None:
    q = "query($t: String!) { placementText(text: $t) { request candidates { rank bottleneckGbps maxIbHops ibHopsKnown "
    q += "rankOrder fragmentation { largestFreeBlockBefore largestFreeBlockAfter } hosts { name rack } } "
    q += "infeasible { constraint message nearestFeasible } } }"
    ok = (await gql(client, q, {"t": "16xGB200 nvlink=full-mesh"}))["data"]["placementText"]
    assert ok["request"] == "16xGB200 nvlink=full-mesh"
    assert ok["candidates"][0]["bottleneckGbps"] == 1800.0
    assert (ok["candidates"][0]["maxIbHops"], ok["candidates"][0]["ibHopsKnown"]) == (1, True)
    assert len({h["rack"] for h in ok["candidates"][0]["hosts"]}) == 1
    bad = (await gql(client, q, {"t": "2xL40S nvlink=any"}))["data"]["placementText"]
    assert bad["candidates"] == [] and bad["infeasible"][0]["constraint"] == "nvlink"
    junk = (await gql(client, q, {"t": "eight GPUs please"}))["data"]["placementText"]
    assert junk["infeasible"][0]["constraint"] == "text"
    invalid = await gql(client, "{ placement(request: {gpus: 0}) { infeasible { constraint message } } }")
    assert invalid["data"]["placement"]["infeasible"][0]["constraint"] == "gpus"


async def test_the_diagnosis_runs_only_when_infeasible_is_selected(client: httpx.AsyncClient, demo: Gateway) -> None:
    """A scheduler reading only candidates does not pay for the diagnosis's searches (issue #15);
    `infeasible`, selected directly or through a fragment, still gets it."""
    text = {"t": "9xH100 nvlink=full-mesh"}  # nothing fits; 9xH100 without the mesh would

    def statements() -> int:
        return sum(stat.calls for stat in demo.stats.values())

    bare = await gql(client, "query($t: String!) { placementText(text: $t) { candidates { score } } }", text)
    assert bare["data"]["placementText"]["candidates"] == []
    demo.stats.clear()  # the first request read the cached model list: count the second
    await gql(client, "query($t: String!) { placementText(text: $t) { candidates { score } } }", text)
    searched = statements()
    fragment = "fragment Why on PlacementResult { infeasible { constraint nearestFeasible } }"
    for q in ("query($t: String!) { placementText(text: $t) { infeasible { constraint nearestFeasible } } }",
              "query($t: String!) { placementText(text: $t) { ...Why } } " + fragment,
              "query($t: String!) { placementText(text: $t) { ... on PlacementResult { infeasible { constraint "
              "nearestFeasible } } } }"):  # fmt: skip
        demo.stats.clear()
        why = (await gql(client, q, text))["data"]["placementText"]["infeasible"]
        assert {"constraint": "nvlink", "nearestFeasible": "9xH100"} in why, q
        assert statements() > searched, q  # the diagnosis's relaxed searches ran too


async def test_browsing(client: httpx.AsyncClient, demo: Gateway) -> None:
    summary = (await gql(client, "{ clusterSummary { hosts gpus freeGpus staleHosts gpusByModel { model gpus } "
                                 "nvlinkDomains { kind size domains } } }"))["data"]["clusterSummary"]  # fmt: skip
    assert summary["hosts"] == 31 + 18 + 2 + 2 and summary["gpus"] == 248 + 72 + 16 + 8
    kinds = {d["kind"] for d in summary["nvlinkDomains"]}
    assert kinds == {"nvswitch", "fabric-clique", "direct"}
    page1 = await gql(
        client,
        '{ hosts(first: 5, filter: {model: "h100"}) { nodes { name freeGpus } pageInfo { hasNextPage endCursor } } }',
    )
    conn = page1["data"]["hosts"]
    assert len(conn["nodes"]) == 5 and conn["pageInfo"]["hasNextPage"]
    after = conn["pageInfo"]["endCursor"]
    page2 = await gql(client, "query($a: String) { hosts(first: 5, after: $a) { nodes { name } } }", {"a": after})
    assert page2["data"]["hosts"]["nodes"][0]["name"] > after
    gpus = await gql(client, '{ gpus(first: 3, filter: {model: "GB200"}) { nodes { uuid model host { name } } } }')
    assert [g["model"] for g in gpus["data"]["gpus"]["nodes"]] == ["NVIDIA GB200"] * 3


async def test_host_detail(client: httpx.AsyncClient, demo: Gateway) -> None:
    q = """{ host(name: "h100-su1-n01") { name rack gpus { index nvlinkDomain } nvlinkMatrix { gpuIndices rows }
           placement { index numaNode pcieSwitch nvswitchLanes } numaNodes { index cpus }
           pcieSwitches { busId } nics { name rail leaf servesGpus } } }"""
    host = (await gql(client, q))["data"]["host"]
    assert host["nvlinkMatrix"]["rows"][0][0] == "X" and host["nvlinkMatrix"]["rows"][0][1] == "NV18"
    assert {p["nvswitchLanes"] for p in host["placement"]} == {18}
    assert [n["rail"] for n in sorted(host["nics"], key=lambda n: n["rail"])] == list(range(8))
    assert all(len(n["servesGpus"]) == 1 for n in host["nics"])
    a100 = (await gql(client, '{ host(name: "a100-001") { nvlinkMatrix { rows } } }'))["data"]["host"]
    assert a100["nvlinkMatrix"]["rows"][0][:3] == ["X", "NV12", "NODE"]  # GPU 2: another switch, same socket
    l40 = (await gql(client, '{ host(name: "l40s-001") { nvlinkMatrix { rows } } }'))["data"]["host"]
    assert l40["nvlinkMatrix"]["rows"][0][:3] == ["X", "PIX", "SYS"]  # GPU 1 shares the switch; GPU 2: other socket
    assert (await gql(client, '{ host(name: "nope") { name } }'))["data"]["host"] is None


async def test_fabric_and_paths(client: httpx.AsyncClient, demo: Gateway) -> None:
    fab = await gql(
        client,
        '{ fabric(tier: "leaf", first: 3) { switches { name tier nics freeGpus uplinks { to bandwidthGbps } } '
        "pageInfo { hasNextPage } } }",
    )
    switches = fab["data"]["fabric"]["switches"]
    assert len(switches) == 3 and all(s["tier"] == "leaf" and s["uplinks"] for s in switches)
    q = "query($a: String!, $b: String!) { fabricPath(fromHost: $a, toHost: $b) { hops bottleneckGbps } }"
    same_su = (await gql(client, q, {"a": "h100-su1-n01", "b": "h100-su1-n02"}))["data"]["fabricPath"]
    assert same_su == {"hops": 1, "bottleneckGbps": 50.0}
    cross = (await gql(client, q, {"a": "h100-su1-n01", "b": "a100-001"}))["data"]["fabricPath"]
    assert cross["hops"] == 3
    assert (await gql(client, q, {"a": "h100-su1-n01", "b": "nope"}))["data"]["fabricPath"] is None


async def test_limits_refuse_abusive_queries(client: httpx.AsyncClient, demo: Gateway) -> None:
    aliases = "{ " + " ".join(f"a{i}: clusterSummary {{ hosts }}" for i in range(20)) + " }"
    body = await gql(client, aliases)
    assert "errors" in body and "aliases" in body["errors"][0]["message"].lower()
    deep = "{ hosts { nodes { name } pageInfo { endCursor } } }"
    assert "errors" not in await gql(client, deep)
    huge = "{ " + " ".join("clusterSummary { hosts }" for _ in range(1000)) + " }"
    assert "errors" in await gql(client, huge)


async def test_a_variable_of_the_wrong_type_is_told_not_masked(
    client: httpx.AsyncClient, gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """GraphQL's own coercion message for a variable (`gpus: "8"`, an unknown input field, a
    missing one) was masked as "Unexpected error." and logged as a bug by the masking, where the
    same mistake written inline was told."""
    reserve = "mutation($i: ReserveInput!) { reserve(input: $i) { __typename } }"
    told: dict[str, dict[str, Any]] = {
        "Int cannot represent non-integer value: '8'": {"i": {"holder": "v", "request": {"gpus": "8"}}},
        "not to include unknown field 'ttl'": {"i": {"holder": "v", "request": {"gpus": 1}, "ttl": 30}},
        "Expected a value of non-null type 'ReserveInput!' to be provided": {},
    }
    for needle, variables in told.items():
        body = await gql(client, reserve, variables)
        assert body.get("data") is None and needle in body["errors"][0]["message"], body
    assert not [r for r in caplog.records if "unexpected error" in r.getMessage()]
    # A caller's mistake is one INFO line, not an ERROR with a traceback (strawberry's own logging).
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert sum("graphql request refused" in r.getMessage() for r in caplog.records) == len(told)


async def test_a_subscription_over_http_is_told_where_subscriptions_are_served(
    client: httpx.AsyncClient, gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """A subscription sent as a POST or GET ran its root field as a query's: "Unexpected error."
    and a traceback logged at ERROR per request, which any token could fill the log with (a
    probe, stop 73). A WebSocket still subscribes (tests/faults/test_subscriptions_ws.py)."""
    document = "subscription { events { kind subject } }"
    sent = [
        await client.post("/graphql", json={"query": document}),
        await client.get("/graphql", params={"query": document}, headers={"accept": "application/json"}),
    ]
    for resp, method in zip(sent, ["POST", "GET"], strict=True):
        assert resp.status_code == 400, resp.text
        assert f"subscriptions are not served over {method}: open a WebSocket to /graphql" in resp.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert "errors" not in await gql(client, "{ clusterSummary { hosts } }")  # queries run as before


def test_a_value_a_field_cannot_serialise_is_still_masked() -> None:
    """graphql-core carries its own error as the original of an output that cannot be serialised
    (an Int beyond 32 bits) too: that one has a path, is ours, and stays masked (and logged)."""
    from graphql import GraphQLError

    from graphsvc.api.graphql.schema import _mask

    inner = GraphQLError("Int cannot represent non 32-bit signed integer value: 1099511627776")
    assert _mask(GraphQLError(inner.message, path=["clusterSummary", "hosts"], original_error=inner))
    assert not _mask(GraphQLError("Variable '$i' got invalid value", original_error=inner))


async def test_unexpected_errors_are_masked(
    client: httpx.AsyncClient, demo: Gateway, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(*_: object, **__: object) -> None:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(demo.backend, "run", boom)
    body = await gql(client, "{ clusterSummary { hosts } }")
    assert body["errors"][0]["message"] == "Unexpected error."
    assert "secret" not in str(body)
    logged = [r for r in caplog.records if r.exc_info and "secret internal detail" in str(r.exc_info[1])]
    assert len(logged) == 1  # once, by the masking (strawberry logged it a second time)


async def test_search_finds_partial_and_approximate_names(client: httpx.AsyncClient, demo: Gateway) -> None:
    q = "query($t: String!) { search(text: $t, first: 5) { kind name host score } }"
    hits = (await gql(client, q, {"t": "su1-n17"}))["data"]["search"]
    assert hits[0] == {"kind": "host", "name": "h100-su1-n17", "host": "h100-su1-n17", "score": 0.9}
    typo = (await gql(client, q, {"t": "h100-su1-n71"}))["data"]["search"]
    assert typo and all(h["kind"] == "host" for h in typo)  # still hosts of su1, best guesses first
    gpu = (await gql(client, '{ host(name: "l40s-001") { gpus { uuid } } }'))["data"]["host"]["gpus"][0]["uuid"]
    found = (await gql(client, q, {"t": gpu[-12:]}))["data"]["search"]
    assert found[0]["kind"] == "gpu" and found[0]["host"] == "l40s-001"
    assert (await gql(client, q, {"t": "  "}))["data"]["search"] == []
    # No stored name is longer than 256 characters; ranking a longer text held the event loop
    # (linear in its length: ~78 s for 200 KB, a probe of stop 58). Told, not searched.
    at_most = (await gql(client, q, {"t": "h100-su1-n17" + "x" * 244}))["data"]["search"]
    assert at_most[0]["name"] == "h100-su1-n17"
    longer = await gql(client, q, {"t": "h100-su1-n17" + "x" * 245})
    assert longer["data"] is None
    assert longer["errors"][0]["message"] == "search text: at most 256 characters, no name is longer (got 257)"


async def test_leaf_load_counts_gpus_behind_each_rail_leaf(client: httpx.AsyncClient, demo: Gateway) -> None:
    rows = (await gql(client, "{ leafLoad { leaf gpus freeGpus } }"))["data"]["leafLoad"]
    su1 = [r for r in rows if r["leaf"].startswith("h100-su1-leaf")]
    assert len(su1) == 8 and {r["gpus"] for r in su1} == {31}  # 31 hosts x one GPU per rail
    assert all(0 <= r["freeGpus"] <= r["gpus"] for r in rows)


async def test_gpu_grid_pages_every_gpu_as_plain_rows(client: httpx.AsyncClient, demo: Gateway) -> None:
    q = "query($a: String) { gpuGrid(first: 100, after: $a) { columns rows endCursor hasNextPage } }"
    seen: list[list[Any]] = []
    after = None
    while True:
        page = (await gql(client, q, {"a": after}))["data"]["gpuGrid"]
        seen += page["rows"]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    total = (await gql(client, "{ clusterSummary { gpus } }"))["data"]["clusterSummary"]["gpus"]
    uuids = [r[0] for r in seen]
    assert len(seen) == total and uuids == sorted(set(uuids))
    row = dict(zip(page["columns"], seen[0], strict=True))
    assert {"uuid", "index", "state", "health", "temperatureC", "nvlinkDomain", "host"} <= set(row)


async def test_leaf_hosts_lists_the_hosts_cabled_to_a_switch(client: httpx.AsyncClient, demo: Gateway) -> None:
    q = "query($l: String!) { leafHosts(leaf: $l) { name freeGpus stale } }"
    su1 = (await gql(client, q, {"l": "h100-su1-leaf-r0"}))["data"]["leafHosts"]
    assert len(su1) == 31 and su1[0]["name"] == "h100-su1-n01" and su1[0]["freeGpus"] == 8
    pcie = (await gql(client, q, {"l": "a100-leaf0"}))["data"]["leafHosts"]
    assert [h["name"] for h in pcie] == ["a100-001", "a100-002"]  # a leaf with no scalable unit
    assert (await gql(client, q, {"l": "nope"}))["data"]["leafHosts"] == []


async def test_a_document_of_several_operations_needs_an_operation_name(
    client: httpx.AsyncClient, demo: Gateway
) -> None:
    """The spec's rule: with several operations and no `operationName`, nothing runs (a probe of
    stop 58 saw the first one run)."""
    doc = "query A { clusterSummary { hosts } } query B { clusterSummary { gpus } }"
    both = (await client.post("/graphql", json={"query": doc})).json()
    assert both.get("data") is None and "operation name" in both["errors"][0]["message"].lower()
    named = (await client.post("/graphql", json={"query": doc, "operationName": "B"})).json()
    assert set(named["data"]["clusterSummary"]) == {"gpus"}
    unknown = await client.post("/graphql", json={"query": doc, "operationName": "C"})
    assert unknown.status_code == 400 and 'Unknown operation named "C"' in unknown.text
