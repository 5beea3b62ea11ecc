"""#13.2: a collected_at in the future no longer freezes a host; operators can unfreeze one.

Updates are ordered by collected_at, so one from a clock an hour ahead made every later
correct update look older, for ever. Now it is refused (422 on `collected_at`, saying by
how much), and a host frozen by an older version is reset by an operator.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from topo_facts import HostMetrics

from graphsvc.api.app import create_app
from graphsvc.ingest.clock import future_skew_problem
from graphsvc.ingest.service import ingest_host
from graphsvc.security.auth import Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.helpers import as_json, h100, with_changes

OPS_TOKEN, OPS_ENTRY = new_token("skew-ops", Role.OPERATOR)
SCHED_TOKEN, SCHED_ENTRY = new_token("skew-sched", Role.SCHEDULER)
SECRETS = (OPS_TOKEN, SCHED_TOKEN)  # the secrets-in-logs test looks for these

RESET = (
    "mutation($h: String!) { resetHostFreshness(host: $h) { __typename "
    "... on HostFreshnessReset { host previousCollectedAt previousMetricsAt } ... on NotFound { message } } }"
)


@pytest.mark.parametrize(
    ("ahead_s", "max_skew_s", "refused"),
    [(0, 300, False), (-86_400, 300, False), (299, 300, False), (301, 300, True), (1, 0, True), (10**9, 300, True)],
)
def test_future_skew_table(ahead_s: float, max_skew_s: float, refused: bool) -> None:
    now = 1_800_000_000.0
    problem = future_skew_problem(datetime.fromtimestamp(now + ahead_s, UTC), now, max_skew_s)
    assert (problem is not None) == refused
    if problem:
        assert f"{ahead_s} s ahead" in problem and "GRAPHSVC_MAX_CLOCK_SKEW_S" in problem


@pytest.fixture
def secured(gateway: Gateway) -> FastAPI:
    return create_app(Settings(tokens=json.dumps([OPS_ENTRY, SCHED_ENTRY])), gateway=gateway)


def client_for(app: FastAPI, token: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(
        transport=transport, base_url="http://testserver", headers={"authorization": f"Bearer {token}"}
    )


def at(offset: timedelta) -> datetime:
    return datetime.now(UTC) + offset


async def put_facts(c: httpx.AsyncClient, collected_at: datetime) -> httpx.Response:
    facts = with_changes(h100("skew-a"), collected_at=collected_at)
    return await c.put("/v1/hosts/skew-a/facts", json=as_json(facts))


async def test_future_facts_and_metrics_are_refused(secured: FastAPI) -> None:
    async with client_for(secured, OPS_TOKEN) as c:
        resp = await put_facts(c, at(timedelta(hours=1)))
        assert resp.status_code == 422, resp.text
        assert resp.json()["fields"][0]["field"] == "collected_at"
        assert "ahead of the service's clock" in resp.json()["error"]
        assert (await c.get("/v1/hosts/skew-a")).status_code == 404  # nothing was written

        assert (await put_facts(c, at(timedelta(seconds=-5)))).json()["applied"] is True
        metrics = HostMetrics(hostname="skew-a", collected_at=at(timedelta(days=365)), gpus=[])
        resp = await c.put("/v1/hosts/skew-a/metrics", content=metrics.model_dump_json(),
                           headers={"content-type": "application/json"})  # fmt: skip
        assert resp.status_code == 422, resp.text
        # A little skew (a minute) is within the default five minutes and applies.
        assert (await put_facts(c, at(timedelta(seconds=60)))).json()["applied"] is True


async def test_a_frozen_host_is_reset_by_an_operator(secured: FastAPI, gateway: Gateway) -> None:
    # As an older version would have: facts from the year 3000 stored.
    frozen = with_changes(h100("skew-a"), collected_at=datetime(3000, 1, 1, tzinfo=UTC))
    assert (await ingest_host(gateway, frozen)).applied
    async with client_for(secured, OPS_TOKEN) as ops, client_for(secured, SCHED_TOKEN) as sched:
        stuck = await put_facts(ops, at(timedelta(seconds=-1)))
        assert stuck.json()["applied"] is False  # the symptom

        denied = (await sched.post("/graphql", json={"query": RESET, "variables": {"h": "skew-a"}})).json()
        assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"

        body: dict[str, Any] = (await ops.post("/graphql", json={"query": RESET, "variables": {"h": "skew-a"}})).json()
        reset = body["data"]["resetHostFreshness"]
        assert reset["__typename"] == "HostFreshnessReset"
        assert reset["previousCollectedAt"] == datetime(3000, 1, 1, tzinfo=UTC).timestamp()

        fixed = await put_facts(ops, at(timedelta(seconds=-1)))
        assert fixed.json()["applied"] is True
        # ... and ordering works again from there on.
        assert (await put_facts(ops, at(timedelta(seconds=-30)))).json()["applied"] is False

        missing = (await ops.post("/graphql", json={"query": RESET, "variables": {"h": "nope"}})).json()
        assert missing["data"]["resetHostFreshness"]["__typename"] == "NotFound"


async def test_cli_reset_host(
    secured: FastAPI, gateway: Gateway, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphsvc.cli import _reset_host
    from tests.faults.live import serving

    frozen = with_changes(h100("skew-a"), collected_at=datetime(3000, 1, 1, tzinfo=UTC))
    assert (await ingest_host(gateway, frozen)).applied
    monkeypatch.setenv("GRAPHSVC_TOKEN", OPS_TOKEN)
    async with serving(secured) as where:
        assert await _reset_host(f"http://{where}", "skew-a") == 0
        assert "skew-a: collection times reset" in capsys.readouterr().out
        assert await _reset_host(f"http://{where}", "nope") == 2


async def test_reset_of_an_impossible_host_name_is_not_found(client: httpx.AsyncClient) -> None:
    """Found by the GraphQL fuzzer: a NUL in the name escaped as a server error."""
    query = "mutation($h: String!) { resetHostFreshness(host: $h) { __typename } }"
    for name in ("bad\u0000name", "", "x" * 300):
        body = (await client.post("/graphql", json={"query": query, "variables": {"h": name}})).json()
        assert body["data"]["resetHostFreshness"]["__typename"] == "NotFound", body
