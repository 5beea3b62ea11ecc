"""Neo4j plans a statement inside its transaction's time budget, and stops a transaction that
waits for a lock past its budget with a code that says only "terminated" (graphsvc.store.neo4j_backend).

A cold server planned the demo's first `ingest_host` in 11 s, past the 10 s budget, and the
request failed as an internal error (CI, 2026-12-06): the stopped transaction's code
(`LockClientStopped`) was not mapped. Now the first run of each plan key gets the plan allowance,
and a terminated transaction is a timeout when it ran its budget, a busy store when it was stopped
sooner. Neo4j only: FalkorDB plans in milliseconds and has no lock waits (one writer per graph).

What bounds these tests is work, not time: a statement of a fresh syntax tree is always planned
(seconds for a statement of `ingest_host`'s size, never under 50 ms), and a lock held by an open
transaction is waited for until the waiter's budget runs out.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from neo4j import AsyncGraphDatabase

from graphsvc.api.app import create_app
from graphsvc.errors import TIMED_OUT
from graphsvc.ingest.host_plan import host_params
from graphsvc.settings import Settings
from graphsvc.store.errors import StoreBusyError, StoreTimeoutError
from graphsvc.store.gateway import Gateway
from graphsvc.store.neo4j_backend import Neo4jBackend, plan_key, size_bucket
from graphsvc.store.queries import NamedQuery, default_registry
from graphsvc.synthetic.hosts import HostSpec, dgx_h100
from tests.neo4j_held import HELD, HeldStatement
from tests.stores import STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")

# The transactions blocked by the held one (tests/neo4j_held.py's BLOCKED, by id).
BLOCKED_IDS = (
    "SHOW TRANSACTIONS YIELD transactionId, status WHERE status STARTS WITH 'Blocked' "
    "AND (status CONTAINS $held + ']' OR status CONTAINS $held + ',') RETURN transactionId AS id"
)
INGEST_HOST = default_registry()["ingest_host"]
TINY_BUDGET_S = 0.05  # under any plan of ingest_host's text; long enough for a cached plan to start


def _fresh_ingest_host() -> NamedQuery:
    """`ingest_host` under a statement no server has planned: it starts with a clause binding a
    variable of a unique name, which changes the statement's syntax tree. Neo4j caches plans by
    that tree, not by the text: a unique comment (the test's first way) no longer made a fresh
    plan once another test had planned `ingest_host` on the same server (CI, 2026-12-07)."""
    query = INGEST_HOST
    text = f"WITH 0 AS fresh_{secrets.token_hex(8)}\n{query.text}"
    return NamedQuery(query.name, text, query.path, query.signature)


def _host(name: str) -> dict[str, Any]:
    return host_params(dgx_h100(HostSpec(name, "plan-budget", "r1", None, 7)), received_at=time.time())


async def _backend(server: Neo4jServer, allowance_s: float) -> Neo4jBackend:
    backend = Neo4jBackend(server.uri, user=server.user, password=server.password, plan_allowance_s=allowance_s)
    await backend.open()
    return backend


def test_plan_keys_follow_neo4js_size_buckets() -> None:
    assert [size_bucket(n) for n in (0, 1, 2, 10, 11, 30, 100, 101)] == [0, 1, 10, 10, 100, 100, 100, 1000]
    eight = {"gpus": [{}] * 8, "host": {"name": "a"}, "name": "n-1"}
    assert plan_key("q", eight) == plan_key("q", {"gpus": [{}] * 9, "host": {"name": "bb"}, "name": "n-22"})
    assert plan_key("q", eight) != plan_key("q", {**eight, "gpus": []})  # a host without GPUs: its own plan
    assert plan_key("q", eight) != plan_key("q", {**eight, "gpus": [{}] * 11})
    assert plan_key("q", {"ids": ["a"]}) != plan_key("q", {"ids": [1]})  # a list of strings is its own type
    assert plan_key("q", {"at": None}) != plan_key("q", {"at": 1.0})


async def test_a_first_run_is_given_time_to_be_planned(neo: tuple[Gateway, Neo4jServer]) -> None:
    _, server = neo
    without = await _backend(server, allowance_s=0)
    try:
        with pytest.raises(StoreTimeoutError):  # the premise: planning alone outlasts the tiny budget
            await without.run(_fresh_ingest_host(), _host("pb-0"), write=True, timeout_s=TINY_BUDGET_S)
    finally:
        await without.close()
    backend = await _backend(server, allowance_s=300)
    try:
        query = _fresh_ingest_host()
        assert await backend.run(query, _host("pb-1"), write=True, timeout_s=TINY_BUDGET_S) == [{"host": "pb-1"}]
        # The same plan key again, behind a lock held open: the budget alone, and a typed timeout.
        held = HeldStatement(server)
        try:
            await held.start("ingest_host", _host("pb-1"))
            with pytest.raises(StoreTimeoutError):
                await backend.run(query, _host("pb-1"), write=True, timeout_s=1.0)
        finally:
            await held.tx.rollback()
            await held.close()
    finally:
        await backend.close()


@asynccontextmanager
async def _behind_a_held_ingest(
    gw: Gateway, server: Neo4jServer, host: str
) -> AsyncIterator[tuple[Neo4jBackend, HeldStatement]]:
    """A backend whose `ingest_host` of `host` has run to the end (its plan key needs no
    allowance), and that host's ingest held open by another transaction: its GPUs locked."""
    await gw.write("ingest_host", _host(host))
    backend = await _backend(server, allowance_s=300)
    held = HeldStatement(server)
    try:
        await backend.run(INGEST_HOST, _host(host), write=True, timeout_s=60)
        await held.start("ingest_host", _host(host))
        yield backend, held
    finally:
        if held.tx is not None:
            await held.tx.rollback()
        await held.close()
        await backend.close()


async def test_a_lock_wait_past_the_budget_is_a_timeout(neo: tuple[Gateway, Neo4jServer]) -> None:
    """Neo4j stops the waiting transaction with LockClientStopped: once a StoreQueryError, which
    the API answered as an internal error (HTTP 500)."""
    async with _behind_a_held_ingest(*neo, "pb-2") as (backend, _):
        with pytest.raises(StoreTimeoutError, match="LockClientStopped"):
            await backend.run(INGEST_HOST, _host("pb-2"), write=True, timeout_s=0.5)


async def test_a_transaction_stopped_before_its_budget_is_a_busy_store(neo: tuple[Gateway, Neo4jServer]) -> None:
    """An operator's TERMINATE TRANSACTION (or a database stopping) is not a timeout: retry later."""
    _, server = neo
    driver = AsyncGraphDatabase.driver(server.uri, auth=(server.user, server.password))
    try:
        async with _behind_a_held_ingest(*neo, "pb-3") as (backend, held):
            waiter = asyncio.ensure_future(backend.run(INGEST_HOST, _host("pb-3"), write=True, timeout_s=300))
            async with driver.session() as admin:
                held_id = (await (await admin.run(HELD, tag=held.tag)).single(strict=True))["transactionId"]
                while not waiter.done():  # until the waiter is blocked by the held transaction: stop it
                    rows = await (await admin.run(BLOCKED_IDS, held=held_id)).data()
                    if rows:
                        await (await admin.run("TERMINATE TRANSACTIONS $ids", ids=[r["id"] for r in rows])).consume()
                        break
                    await asyncio.sleep(0.05)
            with pytest.raises(StoreBusyError, match="before its budget"):
                await waiter
    finally:
        await driver.close()


async def test_the_api_answers_a_lock_wait_past_the_budget_as_a_timeout(neo: tuple[Gateway, Neo4jServer]) -> None:
    """What the demo's loader met (as HTTP 500 "internal error" then): a host's facts sent while
    another write holds its GPUs past the budget are a 503 that says the store timed out."""
    facts = dgx_h100(HostSpec("pb-4", "plan-budget", "r1", None, 7))
    async with _behind_a_held_ingest(*neo, "pb-4") as (backend, _):
        app = create_app(Settings(insecure_dev=True), gateway=Gateway(backend, timeout_s=0.5))
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            answer = await client.put("/v1/hosts/pb-4/facts", json=facts.model_dump(mode="json"))
    assert answer.status_code == 503, answer.text
    assert answer.json() == {"error": TIMED_OUT, "fields": []}
