"""Authorization matrix: every mutation and protected query, for every role and for no token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.security.auth import Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.helpers import as_json, h100

TOKENS: dict[str, str] = {}
ENTRIES: list[dict[str, object]] = []
for name, role, hosts in [
    ("collector-a", Role.COLLECTOR, ["l40s-00*"]),
    ("sched-1", Role.SCHEDULER, []),
    ("sched-2", Role.SCHEDULER, []),
    ("ops", Role.OPERATOR, []),
]:
    token, entry = new_token(name, role, hosts)
    TOKENS[name] = token
    ENTRIES.append(entry)
SECRETS = tuple(TOKENS.values())  # the secrets-in-logs test looks for these


@pytest.fixture
async def secured(gateway: Gateway) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    await load(gateway, "l40s:hosts=2")
    app = create_app(Settings(tokens=json.dumps(ENTRIES), dev_mode=False), gateway=gateway)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c, app


def auth(who: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[who]}"} if who else {}


QUERIES = {
    "clusterSummary": "{ clusterSummary { hosts } }",
    "hosts": "{ hosts { nodes { name } } }",
    "gpus": "{ gpus { nodes { uuid } } }",
    "host": '{ host(name: "l40s-001") { name } }',
    "fabric": "{ fabric { switches { name } } }",
    "fabricPath": '{ fabricPath(fromHost: "l40s-001", toHost: "l40s-002") { hops } }',
    "placement": "{ placement(request: {gpus: 1}) { request } }",
    "placementText": '{ placementText(text: "1") { request } }',
    "preemptionPlan": "{ preemptionPlan(request: {gpus: 1}, priority: 1) { ... on PreemptionPlan { feasible } } }",
    "reservation": '{ reservation(id: "x") { id } }',
    "reservations": "{ reservations { id } }",
    "reserve": 'mutation { reserve(input: {holder: "h", request: {gpus: 1}}) { __typename } }',
}
EXPECT_READ = {None: 401, "collector-a": 403, "sched-1": 200, "ops": 200}


async def graphql_status(c: httpx.AsyncClient, query: str, who: str | None) -> tuple[int, dict[str, Any]]:
    resp = await c.post("/graphql", json={"query": query}, headers=auth(who))
    if resp.status_code != 200:
        return resp.status_code, resp.json()
    body: dict[str, Any] = resp.json()
    codes = {e.get("extensions", {}).get("code") for e in body.get("errors") or []}
    return (403 if "FORBIDDEN" in codes else 200), body


@pytest.mark.parametrize("operation", sorted(QUERIES))
@pytest.mark.parametrize("who", [None, "collector-a", "sched-1", "ops"])
async def test_graphql_matrix(secured: tuple[httpx.AsyncClient, Any], operation: str, who: str | None) -> None:
    c, _ = secured
    status, body = await graphql_status(c, QUERIES[operation], who)
    assert status == EXPECT_READ[who], body
    if status == 403:
        assert "needs the scheduler or operator role" in body["errors"][0]["message"]
    if status == 401:
        assert "Bearer" in body["error"]


async def test_renew_and_release_only_own_or_operator(secured: tuple[httpx.AsyncClient, Any]) -> None:
    c, _ = secured
    _, body = await graphql_status(
        c, 'mutation { reserve(input: {holder: "h", request: {gpus: 1}}) { ... on Reservation { id } } }', "sched-1"
    )
    rid = body["data"]["reserve"]["id"]
    renew = f'mutation {{ renew(id: "{rid}", ttlSeconds: 60) {{ __typename }} }}'
    release = f'mutation {{ release(id: "{rid}") {{ __typename }} }}'
    for query in (renew, release):
        assert (await graphql_status(c, query, None))[0] == 401
        assert (await graphql_status(c, query, "collector-a"))[0] == 403
        assert (await graphql_status(c, query, "sched-2"))[0] == 403  # not its reservation
    assert (await graphql_status(c, renew, "sched-1"))[0] == 200
    assert (await graphql_status(c, renew, "ops"))[0] == 200
    assert (await graphql_status(c, release, "ops"))[0] == 200  # operators release anything
    assert (await graphql_status(c, release, "sched-1"))[0] == 200


@pytest.mark.parametrize(
    ("who", "host", "expected"),
    [
        (None, "l40s-001", 401),
        ("collector-a", "l40s-001", 200),
        ("collector-a", "other-host", 403),  # a collector token cannot write another host
        ("sched-1", "l40s-001", 403),
        ("ops", "other-host", 200),
    ],
)
async def test_fact_ingest_matrix(
    secured: tuple[httpx.AsyncClient, Any], who: str | None, host: str, expected: int
) -> None:
    c, _ = secured
    facts = as_json(h100(host, seed=11))
    resp = await c.put(f"/v1/hosts/{host}/facts", json=facts, headers=auth(who))
    assert resp.status_code == expected, resp.text
    # Newer than the facts, within the allowed clock skew (a far-future time is refused: #13.2).
    newer = (datetime.now(UTC) + timedelta(seconds=60)).isoformat()
    metrics = {"hostname": host, "collected_at": newer, "gpus": []}
    resp = await c.put(f"/v1/hosts/{host}/metrics", json=metrics, headers=auth(who))
    assert resp.status_code in ({expected} if expected != 200 else {200, 404}), resp.text
    if expected == 403:
        assert "forbidden" in resp.json()["error"]


@pytest.mark.parametrize(("host", "expected"), [("other-host", 403), ("l40s-001", 422)])
async def test_a_collector_is_refused_another_host_before_its_body_is_judged(
    secured: tuple[httpx.AsyncClient, Any], host: str, expected: int
) -> None:
    """403 (not yours) before 422 (what is wrong with the body): the scope is checked first."""
    c, _ = secured
    bad = {**as_json(h100(host, seed=11)), "gpus": "not a list"}
    for kind in ("facts", "metrics"):
        resp = await c.put(f"/v1/hosts/{host}/{kind}", json=bad, headers=auth("collector-a"))
        assert resp.status_code == expected, (kind, resp.text)


@pytest.mark.parametrize(
    ("who", "fabric", "read", "export"),
    [(None, 401, 401, 401), ("collector-a", 403, 403, 403), ("sched-1", 403, 200, 200), ("ops", 200, 200, 200)],
)
async def test_rest_matrix(
    secured: tuple[httpx.AsyncClient, Any], who: str | None, fabric: int, read: int, export: int
) -> None:
    c, _ = secured
    assert (await c.put("/v1/fabric", json={"cluster": "other"}, headers=auth(who))).status_code == fabric
    assert (await c.get("/v1/hosts/l40s-001", headers=auth(who))).status_code == read
    assert (await c.get("/v1/export/slurm-tree", headers=auth(who))).status_code == export
    assert (await c.get("/healthz")).status_code == 200  # probes need no token


async def test_bad_tokens_and_introspection(secured: tuple[httpx.AsyncClient, Any]) -> None:
    c, _ = secured
    resp = await c.post(
        "/graphql", json={"query": "{ clusterSummary { hosts } }"}, headers={"authorization": "Bearer nope"}
    )
    assert resp.status_code == 401 and "unknown" in resp.json()["error"]
    assert "nope" not in resp.text
    body = (await c.post("/graphql", json={"query": "{ __schema { types { name } } }"}, headers=auth("ops"))).json()
    assert "errors" in body  # introspection is off outside development mode
    assert (await c.get("/graphql", headers={**auth("ops"), "accept": "text/html"})).status_code != 200


async def test_mutations_are_rate_limited_per_token(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    # A token a ~17 h: nothing refills during the test, however slow the machine.
    settings = Settings(tokens=json.dumps(ENTRIES), mutation_rate_per_minute=0.001, mutation_burst=2)
    app = create_app(settings, gateway=gateway)
    transport = httpx.ASGITransport(app=app)
    query = 'mutation { release(id: "nope") { __typename } }'
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        results = [(await c.post("/graphql", json={"query": query}, headers=auth("ops"))).json() for _ in range(3)]
        other = (await c.post("/graphql", json={"query": query}, headers=auth("sched-1"))).json()
    assert [("errors" in r) for r in results] == [False, False, True]
    assert results[2]["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
    assert "errors" not in other  # buckets are per token
