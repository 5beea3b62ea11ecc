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
import time
from datetime import timedelta
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase
from topo_facts.models import Health, HostFacts

from graphsvc.ingest.host_plan import FINGERPRINT, host_params, unchanged_params
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


def _subtree(op: Plan) -> list[Plan]:
    out = [op]
    for child in op.get("children", []):
        out += _subtree(child)
    return out


def _lock(op: Plan) -> list[str] | None:
    """The variables an operator write-locks by setting a label they have; None: not a lock.
    `SET r:L` plans as SetLabels `r:L`; `FOREACH (x IN CASE ... ELSE [v] END | SET x:L)` and
    `FOREACH (x IN nodes | SET x:L)` as Foreach (printed over several lines): the variables
    locked are `v`, or those collected into `nodes` below it ([] when none is: the nodes are read
    through the list only, and a list's elements are never cached)."""
    kind, details = _kind(op), _details(op)
    if kind == "SetLabels":
        return [details.split(":")[0].strip()]
    if kind != "Foreach":
        return None
    one = re.search(r"ELSE\s*\[(\w+)\]\s*END,\s*SET \w+:", details)
    if one:
        return [one.group(1)]
    listed = re.match(r"\s*(\w+) IN (\w+),\s*SET \1:", details)
    if not listed:
        return None
    collected = rf"collect\((?:DISTINCT )?(\w+)\) AS {listed.group(2)}\b"
    return sorted({v for below in _subtree(op)[1:] for v in re.findall(collected, _details(below))})


_ALIAS = re.compile(r"(?<![\w.\]$`])(\w+) AS (\w+)\b")


def _aliases(plan: Plan) -> dict[str, set[str]]:
    """Each variable's names: `WITH r AS x` plans as a projection `r AS x`, and Neo4j serves
    `x.state` from `r`'s cache (a helper's trial), so both names are one variable here. An
    UNWIND binds anew (a list's elements are read afresh)."""
    names: dict[str, set[str]] = {}
    for op in _subtree(plan):
        if _kind(op) == "Unwind":
            continue
        for a, b in _ALIAS.findall(_details(op)):
            if a != "END":
                joined = names.get(a, {a}) | names.get(b, {b})
                for n in joined:
                    names[n] = joined
    return names


def _binds(op: Plan, names: set[str]) -> bool:
    """Whether the operator binds one of `names` anew (a scan, seek, expand or unwind to it, or
    a projection of an expression that is not a plain variable): reads below it are of another node."""
    details = _details(op)
    for n in names:
        if re.search(rf"->\({n}\)|\({n}\)<-|^{n}:|(?:UNIQUE|INDEX) {n}:", details):
            return True
        for source in re.findall(rf"(\S+) AS {n}\b", details):
            if _kind(op) == "Unwind" or not re.fullmatch(r"\w+", source) or source == "END":
                return True
    return False


def _before(op: Plan, names: set[str]) -> list[Plan]:
    """The operators that run before `op` on the same binding (its inputs, down to where it is bound)."""
    out: list[Plan] = []
    for child in op.get("children", []):
        out.append(child)
        if not _binds(child, names):
            out += _before(child, names)
    return out


def _cached(ops: list[Plan], names: set[str]) -> set[str]:
    return {p for op in ops for var, p in _CACHED.findall(_details(op)) if var in names}


def stale_reads(plan: Plan) -> tuple[list[tuple[str, str]], int]:
    """(variable, property) pairs a plan reads after locking the variable from a cache filled
    before; and how many locks it found. What runs after a lock: the operators above it, and
    (to be safe) the other branches of every operator above it with several inputs (the right
    side of an Apply runs after its left)."""
    aliases = _aliases(plan)
    found: list[tuple[str, str]] = []
    locks = 0

    def walk(op: Plan, after: list[Plan]) -> None:
        nonlocal locks
        locked = _lock(op)
        if locked is not None:
            locks += 1
            for v in locked:
                names = aliases.get(v, {v})
                stale = (_cached(_before(op, names), names) & _cached(after, names)) - KEYS
                found.extend((v, p) for p in sorted(stale))
        children = op.get("children", [])
        for i, child in enumerate(children):
            others = [o for j, sibling in enumerate(children) if j != i for o in _subtree(sibling)]
            walk(child, [*after, op, *others])

    walk(plan, [])
    return found, locks


def lock_markers(text: str) -> int:
    """How many locks a statement's text takes: `SET x:Label` on a `//@lock` line or between
    `//@lock-begin` and `//@lock-end`."""
    blocks = "\n".join(re.findall(r"^//@lock-begin[ \t]*\n(.*?)^//@lock-end", text, re.MULTILINE | re.DOTALL))
    lines = "\n".join(re.findall(r"^.*//@lock[ \t]*$", text, re.MULTILINE))
    return len(re.findall(r"SET \w+:\w+", blocks + "\n" + lines))


def _op(kind: str, details: str, *children: Plan) -> Plan:
    return {"operatorType": f"{kind}@neo4j", "args": {"Details": details}, "children": list(children)}


def _chain(*ops: tuple[str, str]) -> Plan:
    """Operators in the order they run (the first is the leaf)."""
    plan = _op(*ops[0])
    for kind, details in ops[1:]:
        plan = _op(kind, details, plan)
    return plan


SCAN = ("NodeByLabelScan", "r:Reservation")
READ = ("Filter", "cache[r.expires_at] < $now AND cache[r.state] = $s")
CHECK = ("Filter", "cache[r.state] = $s AND cache[r.expires_at] < $now")


def test_the_check_finds_the_read_that_broke() -> None:
    """The plan of expired_without_gpus before the fix, as Neo4j 5.26 printed it (abridged), and after."""
    broke = _chain(SCAN, READ, ("Sort", "`r.id` ASC"), ("SetLabels", "r:Reservation"), CHECK)
    assert stale_reads(broke) == ([("r", "expires_at"), ("r", "state")], 1)
    fixed = _chain(SCAN, READ, ("EagerAggregation", "collect(r) AS candidates"), ("Unwind", "candidates AS r"),
                   ("SetLabels", "r:Reservation"), CHECK)  # fmt: skip
    assert stale_reads(fixed) == ([], 1)


def test_the_check_sees_each_form_of_lock_and_read() -> None:
    """The forms a helper's trial showed the first version of the check missed, each a stale
    read on the real server: a lock by FOREACH over `[v]` (printed over several lines), an alias
    (`WITH r AS x` reads r's cache), a check on the right side of an Apply, a lock of a list."""
    foreach = ("Foreach", "x IN CASE\n  WHEN r IS NULL THEN []\n  ELSE [r]\nEND, SET x:Reservation")
    assert stale_reads(_chain(SCAN, READ, foreach, CHECK)) == ([("r", "expires_at"), ("r", "state")], 1)
    alias = _chain(SCAN, READ, ("SetLabels", "r:Reservation"), ("Projection", "r AS x"),
                   ("Filter", "cache[x.state] = $s"))  # fmt: skip
    assert stale_reads(alias) == ([("r", "state")], 1)
    right = _op("Apply", "", _chain(SCAN, READ, ("SetLabels", "r:Reservation")),
                _chain(("Argument", "r"), ("Filter", "cache[r.state] = $s")))  # fmt: skip
    assert stale_reads(right) == ([("r", "state")], 1)
    listed = _chain(SCAN, READ, ("EagerAggregation", "collect(r) AS rs"), ("Foreach", "x IN rs, SET x:Reservation"),
                    CHECK)  # fmt: skip
    assert stale_reads(listed) == ([("r", "expires_at"), ("r", "state")], 1)
    live = ("Projection", "[x IN rs WHERE x.state = $s] AS live")
    through_list = _chain(SCAN, READ, ("EagerAggregation", "collect(r) AS rs"),
                          ("Foreach", "x IN rs, SET x:Reservation"), live)  # fmt: skip
    assert stale_reads(through_list) == ([], 1)


def test_lock_markers_count_lines_and_blocks() -> None:
    text = "MATCH (r)\nSET r:Reservation //@lock\n//@lock-begin\nFOREACH (x IN hs | SET x:Host)\nWITH 1 AS one\n"
    assert lock_markers(text + "FOREACH (y IN ds | SET y:NVLinkDomain)\n//@lock-end\nSET r.state = 'x'\n") == 3


async def test_no_statement_decides_on_a_property_it_read_before_its_lock(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    await load(gw, mig_cluster())  # plans on a populated graph with the schema's indexes
    locking = [q for q in default_registry() if q.writes and "//@lock" in q.text]
    assert len(locking) >= 20
    stale: dict[str, list[tuple[str, str]]] = {}
    unseen: dict[str, tuple[int, int]] = {}
    driver = AsyncGraphDatabase.driver(server.uri, auth=(server.user, server.password))
    async with driver, driver.session(notifications_min_severity="OFF") as session:
        for q in locking:
            summary = await (await session.run(f"EXPLAIN {q.text}")).consume()
            assert summary.plan is not None, q.name
            found, locks = stale_reads(summary.plan)
            if found:
                stale[q.name] = found
            if locks < lock_markers(q.text):  # a lock the check cannot read is a lock it did not check
                unseen[q.name] = (locks, lock_markers(q.text))
    assert stale == {}
    assert unseen == {}


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
        params = {
            "id": made.id,
            "now": clock.now,
            "ttl_s": 3600,
            "default_ttl_s": 600,
            "max_ttl_s": 604800,
        }  # decided while live
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


async def _newer_facts_held(gw: Gateway, server: Neo4jServer) -> tuple[HostFacts, HeldStatement]:
    """A host loaded, and an ingest of its facts 100 s newer written and held open."""
    host = (await load(gw, "l40s:hosts=2")).hosts[0]
    newer = host.model_copy(update={"collected_at": host.collected_at + timedelta(seconds=100)})
    held = HeldStatement(server)
    rows = await held.start("ingest_host", host_params(newer, received_at=time.time()))
    assert rows == [{"host": host.hostname}], "the newer ingest must have written (uncommitted)"
    return host, held


async def _stored(gw: Gateway, host: HostFacts) -> tuple[float, float | None, str | None]:
    """(collected_at, metrics_at, health of GPU 0) as stored, relative to the host's first facts."""
    t0 = host.collected_at.timestamp()
    [stamps] = await gw.read("host_freshness", {"host": host.hostname})
    [gpu] = await gw.read("gpus_by_uuid", {"uuids": [host.gpus[0].uuid]})
    metrics_at = stamps["metrics_at"] - t0 if stamps["metrics_at"] is not None else None
    return stamps["collected_at"] - t0, metrics_at, gpu["health"]


async def test_older_readings_that_waited_for_newer_facts_are_not_applied(neo: tuple[Gateway, Neo4jServer]) -> None:
    """update_gpu_metrics checked freshness only before its locks: readings 50 s older than facts
    that committed while it waited were written over them (a GPU marked failed by stale data)."""
    gw, server = neo
    host, held = await _newer_facts_held(gw, server)
    at = host.collected_at.timestamp() + 50
    readings = {"host": host.hostname, "collected_at": at, "props": {"metrics_at": at, "received_at": time.time()},
                "readings": {host.gpus[0].uuid: {"health": "failed"}}}  # fmt: skip
    try:
        applied = await held.commit_when_blocked(gw.write("update_gpu_metrics", readings))
    finally:
        await held.close()
    assert applied == []
    assert await _stored(gw, host) == (100.0, None, "ok")


async def test_an_older_unchanged_document_that_waited_for_newer_facts_is_not_applied(
    neo: tuple[Gateway, Neo4jServer],
) -> None:
    """ingest_host_unchanged, the same: its host's collection time went back by 50 s."""
    gw, server = neo
    host, held = await _newer_facts_held(gw, server)
    fingerprint = host_params(host, received_at=0.0)["host"]["props"][FINGERPRINT]
    failed = [host.gpus[0].model_copy(update={"health": Health.FAILED}), *host.gpus[1:]]
    older = host.model_copy(update={"collected_at": host.collected_at + timedelta(seconds=50), "gpus": failed})
    try:
        applied = await held.commit_when_blocked(
            gw.write("ingest_host_unchanged", unchanged_params(older, received_at=time.time(), fingerprint=fingerprint))
        )
    finally:
        await held.close()
    assert applied == []
    assert await _stored(gw, host) == (100.0, None, "ok")
