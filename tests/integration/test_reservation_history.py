"""Ended reservations are deleted once the history is past (the lease job's pruner), and nothing
else is: live reservations, recent history, the GPUs' states and counters, and an ended
reservation a GPU is still marked for (the orphan sweep's case) stay."""

from __future__ import annotations

import logging

import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.leases import LeaseKeeper
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import Clock, free_of, invariants
from tests.stores import adhoc

HISTORY_S = 60.0
MARK = adhoc(
    "mark_gpu_for",
    "MATCH (g:GPU {uuid: $uuid}) SET g.state = 'reserved', g.reservation = $id, g.lease_expires_at = $now "
    "RETURN g.uuid AS uuid",
)

COUNT = adhoc("reservations_left", "MATCH (r:Reservation) RETURN count(r) AS n")


async def _reserved(svc: ReservationService, n: int, key: str | None = None) -> Reservation:
    made = await svc.reserve(holder="job", request=parse_request(f"{n}xL40S"), ttl_s=600, idempotency_key=key)
    assert isinstance(made, Reservation), made
    return made


async def test_reservations_ended_before_the_history_are_deleted_and_nothing_else(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    host = cluster.hosts[0].hostname
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    old = await _reserved(svc, 2, key="old-key")
    held_again = [g.uuid for g in old.gpus]
    await svc.release(old.id)
    other_old = await _reserved(svc, 2)
    await svc.release(other_old.id)
    newer = await svc.reserve(holder="job", gpus=held_again, ttl_s=600)  # old's GPUs, held by a live one now
    assert isinstance(newer, Reservation)
    clock.now += 100
    recent = await _reserved(svc, 1)
    await svc.release(recent.id)
    live = await _reserved(svc, 1)
    free_before = await free_of(gateway, host)

    assert await svc.prune_history(HISTORY_S) == 2  # old and other_old ended 100 s ago; the history is 60 s
    assert await svc.get(old.id) is None and await svc.get(other_old.id) is None
    kept = {r.id: r.state for r in await svc.get_many(ids=[newer.id, recent.id, live.id])}
    assert kept == {newer.id: "active", recent.id: "released", live.id: "active"}
    still = await svc.get(newer.id)
    assert still is not None and sorted(g.uuid for g in still.gpus) == sorted(held_again)
    assert await free_of(gateway, host) == free_before
    await invariants(gateway, clock.now)

    again = await _reserved(svc, 1, key="old-key")  # the key was old's: free again with it gone
    assert again.id != old.id
    gateway.stats.clear()
    assert await svc.prune_history(HISTORY_S) == 0
    assert "reservations/prune_ended" not in gateway.stats  # a read finds nothing: no write


async def test_an_ended_reservation_a_gpu_is_still_marked_for_waits_for_the_sweep(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    ended = await _reserved(svc, 2)
    await svc.release(ended.id)
    await gateway.backend.run(MARK, {"uuid": ended.gpus[0].uuid, "id": ended.id, "now": clock.now + 600},
                              write=True, timeout_s=10)  # fmt: skip
    clock.now += 2 * HISTORY_S
    assert await svc.prune_history(HISTORY_S) == 0
    assert await svc.get(ended.id) is not None
    assert await elastic_for(svc).sweep() == [ended.gpus[0].uuid]
    assert await svc.prune_history(HISTORY_S) == 1
    assert await svc.get(ended.id) is None
    await invariants(gateway, clock.now)


async def test_the_lease_job_prunes_in_bounded_batches(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    for _ in range(5):
        made = await _reserved(svc, 1)
        await svc.release(made.id)
    clock.now += 2 * HISTORY_S
    assert await svc.prune_history(HISTORY_S, batch=2, batches=1) == 2  # one statement of two
    keeper = LeaseKeeper(svc, stale_after_s=1e9, history_s=HISTORY_S, clock=clock)
    await keeper.tick()
    assert await svc.prune_history(HISTORY_S) == 0  # the tick took the other three
    assert await gateway.backend.run(COUNT, {}, write=False, timeout_s=10) == [{"n": 0}]


async def test_a_failing_step_of_the_lease_job_does_not_stop_the_pruning(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await _reserved(svc, 1)
    await svc.release(made.id)
    clock.now += 2 * HISTORY_S

    async def broken() -> int:
        raise RuntimeError("expiry broke")

    monkeypatch.setattr(svc, "expire_due", broken)
    keeper = LeaseKeeper(svc, stale_after_s=1e9, history_s=HISTORY_S, clock=clock)
    with caplog.at_level(logging.ERROR, logger="graphsvc.reservations.leases"):
        await keeper.tick()
    assert await svc.get(made.id) is None  # pruned although the expiry step failed first
    failures = [r for r in caplog.records if r.name == "graphsvc.reservations.leases" and r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failures] == [
        "lease job: expiry failed; its other steps went on, the next run tries again"
    ]


async def test_reservations_left_for_later_do_not_stall_the_pages(gateway: Gateway) -> None:
    """Pages go on from where the last ended: reservations a GPU is still marked for, first in
    line, are passed over (a page that read only them deleted nothing, and every later page read
    them again, before)."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    stuck = [await _reserved(svc, 1) for _ in range(3)]  # three GPUs, one each
    for made in stuck:
        await svc.release(made.id)
        clock.now += 1
    for made in stuck:
        await gateway.backend.run(MARK, {"uuid": made.gpus[0].uuid, "id": made.id, "now": clock.now + 600},
                                  write=True, timeout_s=10)  # fmt: skip
    later = []
    for _ in range(4):
        made = await _reserved(svc, 1)
        await svc.release(made.id)
        later.append(made.id)
        clock.now += 1
    clock.now += 2 * HISTORY_S
    pruned = 0
    for _ in range(6):  # one page of two a call: 7 to read, 4 to delete
        pruned += await svc.prune_history(HISTORY_S, batch=2, batches=1)
    assert pruned == 4
    assert [r.id for r in await svc.get_many(ids=later)] == []
    assert sorted(r.id for r in await svc.get_many(ids=[m.id for m in stuck])) == sorted(m.id for m in stuck)
