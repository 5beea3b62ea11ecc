"""After a lock, a Neo4j statement decides on what others committed, not on what it read before.

The statements lock a node (``SET r:Reservation //@lock``) and then check its state again, because
under read committed isolation another writer may have changed it between the first read and the
lock. Neo4j's planner caches the properties a statement read for a variable and serves later
reads of them from that cache (``cache[r.state]`` in a plan), even after the lock: the check read
the value from before the wait. The lease reaper's statement for reservations without GPUs did
that, and a release that committed while the reaper waited for the reservation's lock was ended
twice (CI, 2026-12-04). A variable unwound from a list is new and is read afresh.

Two ways to see it: every write statement's plan, checked for a mutable property of a locked
variable read from a cache filled before its lock; and the two races that broke, made
deterministic with a held transaction (tests/neo4j_held.py). FalkorDB runs writes one at a time,
so neither can happen there: Neo4j only.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import default_registry
from tests.cluster_helpers import load
from tests.integration.test_mig_slices import Clock, invariants, mig_cluster
from tests.neo4j_held import HeldStatement
from tests.stores import STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")

Plan = dict[str, Any]
KEYS = frozenset({"id", "uuid", "name"})  # never change once written: a cached read of them is current
_CACHED = re.compile(r"cache\[(\w+)\.(\w+)\]")


def _details(op: Plan) -> str:
    return str(op.get("args", {}).get("Details", ""))


def _kind(op: Plan) -> str:
    return str(op["operatorType"]).split("@")[0]


def _locked_variable(op: Plan) -> str | None:
    """The variable an operator write-locks by setting a label it has: `SET r:Reservation` plans
    as SetLabels `r:Reservation`; `FOREACH (x IN CASE ... ELSE [v] END | SET x:L)` as Foreach."""
    if _kind(op) == "SetLabels":
        return _details(op).split(":")[0].strip()
    if _kind(op) == "Foreach":
        one = re.search(r"ELSE \[(\w+)\] END, SET \w+:", _details(op))
        return one.group(1) if one else None
    return None


def _introduces(op: Plan, v: str) -> bool:
    """Whether the operator binds `v` anew (a scan, seek, expand, unwind or projection to it):
    reads below it are of another node, or of the same one under a variable with its own cache."""
    return bool(re.search(rf"\bAS {v}\b|->\({v}\)|\({v}\)<-|^{v}:|(?:UNIQUE|INDEX) {v}:", _details(op)))


def _before(op: Plan, v: str) -> list[Plan]:
    """The operators that run before `op` on the same binding of `v` (its inputs, down to where `v` is bound)."""
    out: list[Plan] = []
    for child in op.get("children", []):
        out.append(child)
        if not _introduces(child, v):
            out += _before(child, v)
    return out


def _cached(ops: list[Plan], v: str) -> set[str]:
    return {p for op in ops for var, p in _CACHED.findall(_details(op)) if var == v}


def stale_reads(plan: Plan) -> list[tuple[str, str]]:
    """(variable, property) pairs a plan reads after locking the variable from a cache filled before."""
    found: list[tuple[str, str]] = []

    def walk(op: Plan, after: list[Plan]) -> None:
        v = _locked_variable(op)
        if v is not None:
            stale = (_cached(_before(op, v), v) & _cached(after, v)) - KEYS
            found.extend((v, p) for p in sorted(stale))
        for child in op.get("children", []):
            walk(child, [*after, op])

    walk(plan, [])
    return found


def test_the_check_finds_the_read_that_broke() -> None:
    """The plan of expired_without_gpus before the fix, as Neo4j 5.26 printed it (abridged)."""
    op = {"operatorType": "Filter@neo4j", "args": {"Details": "cache[r.expires_at] < $now AND cache[r.state] = $s"}}
    chain: Plan = {"operatorType": "NodeByLabelScan@neo4j", "args": {"Details": "r:Reservation"}}
    for kind, details in (
        ("Filter", "cache[r.expires_at] < $now AND cache[r.state] = $s"),
        ("Sort", "`r.id` ASC"),
        ("SetLabels", "r:Reservation"),
        ("Filter", "cache[r.state] = $s AND cache[r.expires_at] < $now"),
    ):
        chain = {"operatorType": f"{kind}@neo4j", "args": {"Details": details}, "children": [chain]}
    assert stale_reads(chain) == [("r", "expires_at"), ("r", "state")]
    unwound = {"operatorType": "Unwind@neo4j", "args": {"Details": "candidates AS r"}, "children": [op]}
    lock = {"operatorType": "SetLabels@neo4j", "args": {"Details": "r:Reservation"}, "children": [unwound]}
    after = {"operatorType": "Filter@neo4j", "args": {"Details": "cache[r.state] = $s"}, "children": [lock]}
    assert stale_reads(after) == []


async def test_no_statement_decides_on_a_property_it_read_before_its_lock(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    await load(gw, mig_cluster())  # plans on a populated graph with the schema's indexes
    locking = [q for q in default_registry() if q.writes and "//@lock" in q.text]
    assert len(locking) >= 20
    stale: dict[str, list[tuple[str, str]]] = {}
    driver = AsyncGraphDatabase.driver(server.uri, auth=(server.user, server.password))
    async with driver, driver.session(notifications_min_severity="OFF") as session:
        for q in locking:
            summary = await (await session.run(f"EXPLAIN {q.text}")).consume()
            assert summary.plan is not None, q.name
            if found := stale_reads(summary.plan):
                stale[q.name] = found
    assert stale == {}


async def _slices_reservation(gw: Gateway, clock: Clock) -> tuple[ReservationService, Reservation]:
    await load(gw, mig_cluster())
    svc = ReservationService(gw, clock=clock)
    made = await svc.reserve(holder="job", request=parse_request("2x 1g.10gb"), ttl_s=60)
    assert isinstance(made, Reservation) and made.slice_count == 2 and not made.gpus, made
    return svc, made


async def test_a_release_while_the_reaper_waits_ends_the_reservation_once(neo: tuple[Gateway, Neo4jServer]) -> None:
    """The CI failure: a reservation of MIG slices holds no GPU, so the reaper's second statement
    (expired_without_gpus) ends it; a release of it committed while that statement waited."""
    gw, server = neo
    clock = Clock()
    svc, made = await _slices_reservation(gw, clock)
    clock.now += 100
    release = HeldStatement(server)
    try:
        rows = await release.start(
            "reservations/end_empty_reservation", {"id": made.id, "now": clock.now, "state": "released"}
        )
        assert rows == [{"id": made.id}], "the release must have written (uncommitted) for the test to mean anything"
        reaped = await release.commit_when_blocked(svc.expire_due())
    finally:
        await release.close()
    assert reaped == []  # the release ended it; the reaper saw that after its lock
    await svc.release(made.id)  # the rest of that release: it frees the slices
    ended = await svc.read(made.id)
    assert ended is not None and (ended.state, ended.ended_at) == ("expired", made.expires_at)
    assert not any(s.held for s in ended.slices)
    await invariants(gw, clock.now)


async def test_a_renew_while_the_reaper_waits_keeps_its_lease(neo: tuple[Gateway, Neo4jServer]) -> None:
    """A renew of MIG slices (no GPU to lock first) committed while the reaper waited for the
    reservation's lock: the reaper read the old expiry before the wait and ended a live lease."""
    gw, server = neo
    clock = Clock()
    svc, made = await _slices_reservation(gw, clock)
    renewed_until = clock.now + 3600
    renew = HeldStatement(server)
    try:
        params = {"id": made.id, "now": clock.now, "expires_at": renewed_until}  # decided while the lease was live
        assert await renew.start("reservations/renew_mig_slices", params) == [{"id": made.id, "slices": 2}]
        clock.now += 100  # the reaper runs after the old lease's end
        reaped = await renew.commit_when_blocked(svc.expire_due())
    finally:
        await renew.close()
    assert reaped == []
    live = await svc.read(made.id)
    assert live is not None and (live.state, live.expires_at) == ("active", renewed_until)
    assert all(s.held for s in live.slices) and len(live.slices) == 2
    await invariants(gw, clock.now)
