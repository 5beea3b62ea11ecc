"""The query cost of fields that read much, and Floats too large to be numbers, through the app
(both stores; graphsvc/api/graphql/cost.py and limiter_rules.py, docs/deploy.md, Limits).

- compareSites naming no site compares every site of the catalogue: it was priced as 3 sites
  whatever the catalogue held (up to 1,000).
- nextPhase, replaceFailed, impact, search and gpuGrid were priced 1 whatever they read.
- A Float literal too large for a double (1e400, or 5,000 digits) reached the resolver as
  infinity: `renew(lastCheckpointAt: 1e400)` stored it, `compareSites(deadlineHours: 1e400)`
  compared with it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from graphsvc import services as services_module
from graphsvc.api.app import create_app
from graphsvc.api.graphql import cost
from graphsvc.settings import Settings
from graphsvc.sites.catalog import SiteCatalog, SiteIn
from graphsvc.sites.model import SiteKind
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway

COMPARE = '{ compareSites(text: "8xH100", profile: {gpuHours: 1}%s) { __typename } }'
HUGE_FLOAT = "1" + "0" * 5000


def app_with(gateway: Gateway, **settings: Any) -> FastAPI:
    return create_app(Settings(insecure_dev=True, **settings), gateway=gateway)


async def post(app: FastAPI, body: dict[str, Any] | bytes) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        if isinstance(body, bytes):
            resp = await c.post("/graphql", content=body, headers={"content-type": "application/json"})
        else:
            resp = await c.post("/graphql", json=body)
    assert resp.status_code == 200, resp.text
    answer: dict[str, Any] = resp.json()
    return answer


def refused_cost(body: dict[str, Any]) -> int | None:
    """The cost a QUERY_TOO_EXPENSIVE refusal quotes, None when the operation was not refused so."""
    for error in body.get("errors") or []:
        if (error.get("extensions") or {}).get("code") == "QUERY_TOO_EXPENSIVE":
            quoted: int = error["extensions"]["cost"]
            return quoted
    return None


async def test_compare_sites_naming_none_is_priced_by_the_sites_the_catalogue_holds(gateway: Gateway) -> None:
    sites = [SiteIn(name=f"site{i}", kind=SiteKind.ON_PREM) for i in range(6)]
    await put_sites(gateway, SiteCatalog(sites=sites), 1.0)
    reads: list[str] = []
    original = gateway.read

    async def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(name)
        return await original(name, *args, **kwargs)

    gateway.read = counted  # type: ignore[method-assign]
    # 8 GPUs: 3 a search, 5 searches a site at most (cost.COMPARE_SEARCHES), one of them now.
    # Six sites' searches now cost 18, over a limit of 17: refused, quoting the full price (90);
    # priced as 3 sites (9 now), it would have run with a coarser wait.
    app = app_with(gateway, graphql_max_cost=17, graphql_cost_burst=1000)
    for _ in range(2):
        body = await post(app, {"query": COMPARE % ""})
        assert refused_cost(body) == 6 * 5 * 3, body
    # The count is read once, not per request (nothing else ran: both were refused).
    assert reads.count("sites_list") == 1
    named = await post(app, {"query": COMPARE % ', sites: ["site0", "site1"]'})
    assert refused_cost(named) is None, named
    assert named["data"]["compareSites"]["__typename"] == "SiteComparison", named


async def test_compare_sites_is_priced_as_the_largest_catalogue_when_the_count_cannot_be_read(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unreadable(_gw: Gateway) -> list[Any]:
        from graphsvc.store.errors import StoreUnavailableError

        raise StoreUnavailableError("down")

    monkeypatch.setattr(services_module, "list_sites", unreadable)
    body = await post(app_with(gateway), {"query": COMPARE % ""})
    assert refused_cost(body) == cost.MAX_SITES * cost.COMPARE_SEARCHES * 3, body


@pytest.mark.parametrize(
    ("field", "price"),
    [
        ('nextPhase(id: "r") { __typename }', 514),
        ('replaceFailed(id: "r") { __typename }', 514),
        ('impact(of: {host: "h"}) { __typename }', 130),
        ('search(text: "' + "x" * 256 + '") { name }', 131),
        ("gpuGrid(first: 5000) { rows }", 51),
    ],
    ids=["nextPhase", "replaceFailed", "impact", "search", "gpuGrid"],
)
async def test_fields_that_read_much_are_refused_when_they_add_up(gateway: Gateway, field: str, price: int) -> None:
    """Three of each, over a limit just below their price; priced 1 each, they all ran."""
    kind = "mutation" if field.startswith("replaceFailed") else "query"
    query = kind + " { " + " ".join(f"f{i}: {field}" for i in range(3)) + " }"
    body = await post(app_with(gateway, graphql_max_cost=3 * price - 1), {"query": query})
    assert body["data"] is None, body
    assert refused_cost(body) == 3 * price, body


FLOAT_LITERALS = {
    "renew's lastCheckpointAt": 'mutation { renew(id: "r", lastCheckpointAt: %s) { __typename } }',
    "compareSites' deadlineHours": (
        '{ compareSites(text: "8", profile: {gpuHours: 1}, deadlineHours: %s, sites: ["a"]) { __typename } }'
    ),
    "an input field": '{ compareSites(text: "8", profile: {gpuHours: %s}, sites: ["a"]) { __typename } }',
    "a placement capability": (
        "{ placement(request: {gpus: 8, capabilities: {minMemoryBandwidthGBps: %s}}) { request } }"
    ),
    "a variable's default": (
        'query($d: Float = %s) { compareSites(text: "8", profile: {gpuHours: 1}, deadlineHours: $d, sites: ["a"])'
        " { __typename } }"
    ),
}


@pytest.mark.parametrize("literal", [HUGE_FLOAT, HUGE_FLOAT + ".5", "1e400", "-1e400"], ids=lambda v: v[:8])
@pytest.mark.parametrize("query", FLOAT_LITERALS.values(), ids=FLOAT_LITERALS)
async def test_a_float_literal_too_large_for_a_double_is_a_validation_error(
    gateway: Gateway, query: str, literal: str
) -> None:
    body = await post(app_with(gateway), {"query": query % literal})
    assert body.get("data") is None, body
    [error] = body["errors"]
    assert error["message"].startswith(f"Number too large ({len(literal)} characters): a Float is a finite"), error
    assert HUGE_FLOAT[:50] not in error["message"]  # the digits are not echoed
    assert "locations" in error


async def test_a_float_variable_too_large_for_a_double_is_refused_not_masked(gateway: Gateway) -> None:
    """JSON reads 1e400 as infinity; graphql-core refuses it as a Float, and it is told, not masked."""
    query = 'query($d: Float) { compareSites(text: "8", profile: {gpuHours: 1}, deadlineHours: $d) { __typename } }'
    raw = json.dumps({"query": query, "variables": {"d": 0}}).replace('"d": 0', '"d": 1e400').encode()
    body = await post(app_with(gateway), raw)
    assert body.get("data") is None, body
    [error] = body["errors"]
    assert "Float cannot represent" in error["message"] and "Unexpected error" not in error["message"], error


async def test_a_finite_float_still_runs(gateway: Gateway) -> None:
    body = await post(
        app_with(gateway), {"query": 'mutation { renew(id: "r", lastCheckpointAt: 1.5e9) { __typename } }'}
    )
    assert "errors" not in body, body
