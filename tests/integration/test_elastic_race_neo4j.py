"""The race that only Neo4j has (docs/reservations.md), made deterministic.

Release, expiry and preempt_and_reserve read a reservation's GPUs and then lock them. Under
Neo4j's read committed isolation a grow (resize_reservation) that commits between that read
and those locks gives the reservation GPUs the statement did not lock. Here the grow's
statement runs in an open transaction of its own, holding its locks; the other statement
starts, reads the GPUs (the grow is not visible yet) and blocks on the first GPU lock; only
then does the grow commit. Without the second read after the reservation's lock, the
reservation ends with the grown GPUs still marked reserved for it (held by nobody). FalkorDB
runs writes one at a time, so the interleaving cannot happen there: Neo4j only.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_elastic_resize import consistent
from tests.integration.test_reservations import Clock
from tests.neo4j_held import HeldStatement
from tests.stores import STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")


class HeldGrow(HeldStatement):
    """resize_reservation in an open transaction: written, locks held, not committed."""

    async def grow(self, rid: str, have: list[str], add: list[str], now: float) -> None:
        params = {"id": rid, "add": sorted(add), "remove": [], "now": now, "gpu_count": len(have) + len(add),
                  "rank_order": have + add}  # fmt: skip
        rows = await self.start("reservations/resize_reservation", params)
        assert rows == [{"id": rid}], "the grow must have written (uncommitted) for the test to mean anything"


async def _setup(gw: Gateway, clock: Clock, **kw: Any) -> tuple[ReservationService, Reservation, list[str], list[str]]:
    cluster = await load(gw, "dgx1:hosts=2")
    svc = ReservationService(gw, clock=clock, **kw)
    host = cluster.hosts[0]
    have = sorted(g.uuid for g in host.gpus if g.index < 4)
    add = sorted(g.uuid for g in host.gpus if g.index >= 4)
    made = await svc.reserve(holder="job", gpus=have, ttl_s=600, preemptible=True)
    assert isinstance(made, Reservation), made
    return svc, made, have, add


@pytest.mark.parametrize("group_commit", [False, True], ids=["release_reservation", "release_batch"])
async def test_a_release_racing_a_grow_frees_every_gpu(neo: tuple[Gateway, Neo4jServer], group_commit: bool) -> None:
    gw, server = neo
    clock = Clock()
    svc, made, have, add = await _setup(gw, clock, group_commit=group_commit)
    grow = HeldGrow(server)
    try:
        await grow.grow(made.id, have, add, clock.now)
        released = await grow.commit_when_blocked(svc.release(made.id))
    finally:
        await grow.close()
    assert isinstance(released, Reservation) and released.state == "released"
    assert await gw.read("reservations/orphaned_gpus") == []
    rows = await gw.read("gpus_by_uuid", {"uuids": have + add})
    assert {r["uuid"]: r["state"] for r in rows} == dict.fromkeys(have + add, "free")
    await consistent(gw, clock.now)


async def test_an_expiry_racing_a_grow_frees_every_gpu(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    clock = Clock()
    svc, made, have, add = await _setup(gw, clock)
    grow = HeldGrow(server)
    try:
        await grow.grow(made.id, have, add, clock.now)  # the grow decided while the lease was live
        clock.now += 1000
        first = await grow.commit_when_blocked(svc.expire_due())
    finally:
        await grow.close()
    assert await gw.read("reservations/orphaned_gpus") == []
    # The run that raced left it alone (lapsed, still holding its 8 GPUs); the next ends it whole.
    assert first == [] and len((await svc.get_many(ids=[made.id]))[0].gpus) == 8
    assert await svc.expire_due() == [made.id]
    rows = await gw.read("gpus_by_uuid", {"uuids": have + add})
    assert {r["uuid"]: r["state"] for r in rows} == dict.fromkeys(have + add, "free")
    await consistent(gw, clock.now)


async def test_a_preemption_racing_a_grow_of_its_victim_writes_nothing(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    clock = Clock()
    svc, victim, have, add = await _setup(gw, clock)
    props = {"id": "rsv-urgent", "holder": "urgent", "state": "active", "priority": 9, "preemptible": False,
             "labels": [], "idempotency_key": "rsv-urgent", "gpu_count": 4, "owner": "urgent",
             "created_at": clock.now, "expires_at": clock.now + 600}  # fmt: skip
    grow = HeldGrow(server)
    try:
        await grow.grow(victim.id, have, add, clock.now)
        params = {"now": clock.now, "props": props, "uuids": have, "victims": [victim.id]}
        rows = await grow.commit_when_blocked(gw.write("reservations/preempt_and_reserve", params))
    finally:
        await grow.close()
    assert rows == []  # the victim grew under the read: nothing written, the caller plans again
    assert await svc.get_many(ids=["rsv-urgent"]) == []
    after = (await svc.get_many(ids=[victim.id]))[0]
    assert after.state == "active" and sorted(g.uuid for g in after.gpus if g.held) == sorted(have + add)
    await consistent(gw, clock.now)


async def test_a_renew_racing_a_grow_is_not_told_its_lease_expired(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    clock = Clock()
    svc, made, have, add = await _setup(gw, clock)
    grow = HeldGrow(server)
    try:
        await grow.grow(made.id, have, add, clock.now)
        renewed = await grow.commit_when_blocked(svc.renew(made.id, 3600))
    finally:
        await grow.close()
    # The renew locked the 4 GPUs it read, then saw 8 owned: it reads again instead of telling a
    # live job that its lease ran out (the holder would stop).
    assert isinstance(renewed, Reservation) and renewed.expires_at == clock.now + 3600, renewed
    assert len([g for g in renewed.gpus if g.held]) == 8
    await consistent(gw, clock.now)
