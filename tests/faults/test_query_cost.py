"""#13.9: a cost per GraphQL operation, a cap per request and a budget per token.

15 aliases of `placement(gpus: 4096)` took 7 s and four such requests stalled everything:
now such an operation is refused before any resolver runs, with a typed error; cheaper
operations are charged to the token's budget, and an empty budget is a typed error too.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from graphql import parse

from graphsvc.api.app import create_app
from graphsvc.api.graphql.cost import field_cost, operation_cost
from graphsvc.security.auth import RateLimiter, Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.conftest import REPO

A_TOKEN, A_ENTRY = new_token("cost-a", Role.SCHEDULER)
B_TOKEN, B_ENTRY = new_token("cost-b", Role.SCHEDULER)
SECRETS = (A_TOKEN, B_TOKEN)  # the secrets-in-logs test looks for these

HUGE = "{ " + " ".join(f"p{i}: placement(request: {{gpus: 4096}}) {{ request }}" for i in range(15)) + " }"


@pytest.mark.parametrize(
    ("query", "variables", "cost"),
    [
        ('{ host(name: "a") { name } }', None, 1),
        ("{ placement(request: {gpus: 8}) { request } }", None, 3),
        ("{ placement(request: {gpus: 4096}) { request } }", None, 514),
        (HUGE, None, 15 * 514),
        ("query($n: Int!) { placement(request: {gpus: $n}) { request } }", {"n": 64}, 10),
        ("query($r: PlacementRequestInput!) { placement(request: $r) { request } }", {"r": {"gpus": 800}}, 102),
        ('{ placementText(text: "1024xH100 nvlink=full-mesh") { request } }', None, 130),
        ("{ hosts(first: 500) { nodes { name } } clusterSummary { hosts } }", None, 6 + 5),
        ("{ a: hosts { nodes { name } } b: hosts { nodes { name } } }", None, 4),
        ("{ ...F } fragment F on Query { placement(request: {gpus: 80}) { request } }", None, 12),
        ('{ ... on Query { host(name: "x") { name } } }', None, 1),
        ('mutation { reserve(input: {holder: "h", gpus: ["a", "b"]}) { __typename } }', None, 3),
        ('mutation { reserve(input: {holder: "h", request: {gpus: 16}}) { __typename } }', None, 4),
        ('query A { host(name: "a") { name } } query B { clusterSummary { hosts } }', None, 1),
    ],
)
def test_operation_cost_table(query: str, variables: dict[str, Any] | None, cost: int) -> None:
    assert operation_cost(parse(query), "A" if "query A" in query else None, variables) == cost


def test_field_cost_survives_hostile_arguments() -> None:
    assert field_cost("placement", {"request": {"gpus": float("inf")}}) == 2 + 1
    # More GPUs than a request may ask for is refused before any search: the base cost only.
    assert field_cost("placement", {"request": {"gpus": 10**30}}) == 2
    assert field_cost("placement", {"request": {"gpus": 4097}}) == 2
    assert field_cost("placement", {"request": None}) == 3
    assert field_cost("hosts", {"first": -5}) == 1
    assert field_cost("placementText", {"text": "9" * 50}) == 2
    # The whole count, as the request parser reads it: leading zeros (a probe priced
    # "0000000004096xH100" at 0 GPUs from its first nine digits).
    assert field_cost("placementText", {"text": "0000000004096xH100"}) == 514
    assert field_cost("placementText", {"text": "4096xH100"}) == 514
    # Other scripts' digits: the parser refuses them (stop 60), so they are priced unsearched: the
    # base, as any text the parser refuses (3 until stop 63, when the price became the parser's).
    assert field_cost("placementText", {"text": "\u0664\u0660\u0669\u0666xH100"}) == 2  # Arabic-Indic 4096
    assert field_cost("placementText", {"text": "0" * 5000 + "8xH100"}) == 2  # over the text limit: refused unsearched
    assert field_cost("somethingNew", {}) == 1


def test_budget_refills_with_time() -> None:
    budget = RateLimiter(per_minute=600, burst=100)  # 10 units a second
    assert budget.allow("t", now=0.0, cost=100)
    assert not budget.allow("t", now=0.0, cost=50)
    assert budget.wait_s("t", 50) == pytest.approx(5.0)
    assert budget.allow("t", now=5.0, cost=50)


def test_settings_refuse_a_burst_smaller_than_one_query() -> None:
    with pytest.raises(ValueError, match="graphql_cost_burst"):
        Settings(graphql_max_cost=500, graphql_cost_burst=100)


def app_with(gateway: Gateway, **settings: Any) -> FastAPI:
    return create_app(Settings(tokens=json.dumps([A_ENTRY, B_ENTRY]), **settings), gateway=gateway)


async def post(app: FastAPI, token: str, query: str) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.post("/graphql", json={"query": query}, headers={"authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


class PlacementSpy:
    """Counts calls to the engine's place (the engine itself still runs)."""

    def __init__(self, app: FastAPI) -> None:
        engine = app.state.reservations.engine
        self.calls = 0
        original = engine.place

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await original(*args, **kwargs)

        engine.place = counted


async def test_fifteen_huge_placements_are_refused_before_any_runs(gateway: Gateway) -> None:
    app = app_with(gateway)
    spy = PlacementSpy(app)
    body = await post(app, A_TOKEN, HUGE)
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_EXPENSIVE"
    assert error["extensions"]["cost"] == 15 * 514
    assert error["extensions"]["limit"] == 1000
    assert "too expensive" in error["message"]
    assert spy.calls == 0


async def test_more_gpus_than_any_request_may_ask_hears_the_requests_own_error(gateway: Gateway) -> None:
    """Before, `graphsvc place "100000xH100"` was told the query costs 12502 (no smaller page or
    fewer aliases could help); REST and `graphsvc reserve` said the GPU count's range."""
    app = app_with(gateway)
    body = await post(app, A_TOKEN, '{ placementText(text: "100000xH100") { infeasible { constraint message } } }')
    assert "errors" not in body, body
    assert body["data"]["placementText"]["infeasible"] == [
        {"constraint": "gpus", "message": "must be between 1 and 4096"}
    ]


async def test_one_huge_placement_is_allowed(gateway: Gateway) -> None:
    app = app_with(gateway)
    spy = PlacementSpy(app)
    body = await post(app, A_TOKEN, "{ placement(request: {gpus: 4096}) { request } }")
    assert "errors" not in body, body
    assert spy.calls >= 1  # (the engine also calls itself to find the nearest feasible request)


async def test_each_token_has_its_own_budget(gateway: Gateway) -> None:
    # 30 units at once, refilling at 1 unit a minute: three queries of 10, then a typed refusal.
    app = app_with(gateway, graphql_max_cost=30, graphql_cost_burst=30, graphql_cost_per_minute=1)
    query = "{ placement(request: {gpus: 64}) { request } }"  # costs 10
    for _ in range(3):
        assert "errors" not in await post(app, A_TOKEN, query)
    refused = await post(app, A_TOKEN, query)
    assert refused["data"] is None
    [error] = refused["errors"]
    assert error["extensions"]["code"] == "QUERY_BUDGET_EXCEEDED"
    assert error["extensions"]["retryAfterSeconds"] > 0
    assert "errors" not in await post(app, B_TOKEN, query)  # another token is not affected


def test_cost_is_documented() -> None:
    deploy = (REPO / "docs" / "deploy.md").read_text()
    for setting in ("GRAPHSVC_GRAPHQL_MAX_COST", "GRAPHSVC_GRAPHQL_COST_PER_MINUTE", "GRAPHSVC_GRAPHQL_COST_BURST"):
        assert setting in deploy


# Stop 63: fifteen 4,096-GPU placements, refused in their plain form (HUGE), ran when written
# another way; and fields that search were priced 1. Each is refused through the app, as HUGE is,
# before anything runs (tests/unit/test_cost_rules.py has every rule's table).
def _fifteen(field: str) -> str:
    return " ".join(f"p{i}: {field}" for i in range(15))


_NESTED = "{ " + "... on Query { " * 21 + HUGE[2:-2] + " }" * 21 + " }"
BYPASSES = {
    "21 nested inline fragments": _NESTED,
    "a variable's default": "query($g: Int = 4096) { " + _fifteen("placement(request: {gpus: $g}) { request }") + " }",
    "a quoted request text": "{ " + _fifteen("placementText(text: \"'4096'xH100\") { request }") + " }",
    "an ideographic space": "{ " + _fifteen('placementText(text: "\\u30004096xH100") { request }') + " }",
    "shapedPlacement, priced 1": "{ " + _fifteen('shapedPlacement(text: "tp=8 dp=512") { request }') + " }",
    "sitePlacement, priced 1": "{ " + _fifteen("sitePlacement(request: {gpus: 4096}) { __typename }") + " }",
}


@pytest.mark.parametrize("query", BYPASSES.values(), ids=BYPASSES)
async def test_a_bypass_is_refused_as_its_plain_form(gateway: Gateway, query: str) -> None:
    app = app_with(gateway)
    spy = PlacementSpy(app)
    body = await post(app, A_TOKEN, query)
    assert body["data"] is None, body
    [error] = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_EXPENSIVE"
    assert error["extensions"]["cost"] == 15 * 514
    assert spy.calls == 0


@pytest.mark.parametrize("text", ["'4096'xH100", '"4096xH100"', "\u30004096xH100", "\x1c4096xH100"], ids=ascii)
async def test_the_fast_path_prices_a_request_text_as_the_parser_reads_it(gateway: Gateway, text: str) -> None:
    """POST /v1/place and /v1/reservations price their text as GraphQL's placementText does: the
    spellings above were priced as 1 GPU (3 units), under a limit of 100 that refuses 4096xH100."""
    app = app_with(gateway, graphql_max_cost=100)
    spy = PlacementSpy(app)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    headers = {"authorization": f"Bearer {A_TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        place = await c.post("/v1/place", json={"request": text}, headers=headers)
        reserve = await c.post("/v1/reservations", json={"holder": "j", "request": text}, headers=headers)
    for resp in (place, reserve):
        assert resp.status_code == 400, resp.text
        assert "it costs 514" in resp.json()["detail"]
    assert spy.calls == 0
