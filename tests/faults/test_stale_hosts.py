"""#13.11: hosts not heard from for stale_after_s are not offered by placement, and /healthz
says "degraded" when any host is stale (#17: with their count and names; `all_hosts_stale`
when every host is: the collectors, or their network, are down)."""

from __future__ import annotations

import time

import httpx
import pytest
from fastapi import FastAPI

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.queries import with_test_queries

PLACE = "{ placement(request: {gpus: 1, limit: 10}) { candidates { hosts { name } } infeasible { constraint } } }"


async def make_silent(gateway: Gateway, host: str, hours: float) -> None:
    """As if the host's collector last reported `hours` ago (metrics carry received_at)."""
    await gateway.write(
        "update_gpu_metrics",
        {
            "host": host,
            "collected_at": time.time() + 1,
            "props": {"metrics_at": time.time() + 1, "received_at": time.time() - hours * 3600},
            "readings": {},
        },
    )


@pytest.fixture
async def app(gateway: Gateway) -> FastAPI:
    await load(gateway, "l40s:hosts=2")
    return create_app(Settings(insecure_dev=True, stale_after_s=600), gateway=gateway)


async def offered(client: httpx.AsyncClient) -> set[str]:
    body = (await client.post("/graphql", json={"query": PLACE})).json()
    return {h["name"] for c in body["data"]["placement"]["candidates"] for h in c["hosts"]}


async def test_stale_host_is_not_offered(gateway: Gateway, client: httpx.AsyncClient) -> None:
    assert await offered(client) == {"l40s-001", "l40s-002"}
    await make_silent(gateway, "l40s-001", hours=1)
    assert await offered(client) == {"l40s-002"}
    resp = await client.get("/healthz")
    health = resp.json()
    # #17: one stale host is enough for degraded (it was "ok" until every host was stale).
    assert resp.status_code == 200
    assert health["status"] == "degraded" and health["stale_hosts"] == 1
    assert health["stale_host_names"] == ["l40s-001"] and health["all_hosts_stale"] is False


async def test_every_host_stale_is_degraded(gateway: Gateway, client: httpx.AsyncClient) -> None:
    for host in ("l40s-001", "l40s-002"):
        await make_silent(gateway, host, hours=1)
    assert await offered(client) == set()
    body = (await client.post("/graphql", json={"query": PLACE.replace("constraint", "constraint message")})).json()
    [stale] = [r for r in body["data"]["placement"]["infeasible"] if r["constraint"] == "stale"]
    assert stale["message"].startswith("2 host(s) not heard from for more than 600 s")
    resp = await client.get("/healthz")
    assert resp.status_code == 200
    assert resp.json()["status"] == "degraded"
    assert resp.json()["stale_hosts"] == 2
    assert resp.json()["stale_host_names"] == ["l40s-001", "l40s-002"] and resp.json()["all_hosts_stale"] is True


async def test_a_recent_report_brings_a_host_back(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await make_silent(gateway, "l40s-001", hours=1)
    await make_silent(gateway, "l40s-001", hours=0)
    assert await offered(client) == {"l40s-001", "l40s-002"}
    health = (await client.get("/healthz")).json()
    assert health["status"] == "ok" and health["stale_hosts"] == 0 and health["stale_host_names"] == []


async def test_empty_graph_is_ok_not_degraded(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await with_test_queries(gateway).write("reset_graph")
    assert (await client.get("/healthz")).json()["status"] == "ok"
