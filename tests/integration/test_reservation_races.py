"""Races the adversarial run found, on both stores: renew against a takeover, one idempotency key
from two clients at once, and the counters of a domain two writers share."""

from __future__ import annotations

import asyncio
import logging

import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import LeaseExpired, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import Clock, invariants

TTL = 10


async def test_renew_after_a_takeover_answers_lease_expired(gateway: Gateway) -> None:
    """A's renew read its clock before its lease lapsed, but runs after B took the GPUs over.

    Before the fix the renew only compared expires_at with that clock: A came back active and
    extended, holding nothing, while B owned its GPUs (the launcher would keep running).
    """
    cluster = await load(gateway, "l40s:hosts=1")
    uuids = [g.uuid for g in cluster.hosts[0].gpus][:2]
    a_clock, b_clock = Clock(), Clock()
    a_svc = ReservationService(gateway, clock=a_clock)
    b_svc = ReservationService(gateway, clock=b_clock)
    a = await a_svc.reserve(holder="a", gpus=uuids, ttl_s=TTL)
    assert isinstance(a, Reservation)
    b_clock.now += TTL + 1  # B's view: A's lease has lapsed
    b = await b_svc.reserve(holder="b", gpus=uuids, ttl_s=TTL)
    assert isinstance(b, Reservation), b
    renewed = await a_svc.renew(a.id, TTL)  # A's clock still before its expiry
    assert isinstance(renewed, LeaseExpired), renewed
    after = await a_svc.get(a.id)
    assert after is not None and after.expires_at == a.expires_at  # not extended
    held = await b_svc.get(b.id)
    assert held is not None and sorted(g.uuid for g in held.gpus if g.held) == sorted(uuids)


async def test_a_release_landing_right_after_a_renew_does_not_become_the_renews_answer(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renew committed, then a release did, then the renew read the reservation back and
    answered `Reservation` with state `released` and the new lease (1-8 of 30 racing pairs in an
    adversarial trial). The renew now answers what it wrote."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    held = await svc.reserve(holder="job", request=parse_request("2xL40S"), ttl_s=60)
    assert isinstance(held, Reservation)
    write = gateway.write

    async def then_release(name: str, params: dict[str, object] | None = None) -> list[dict[str, object]]:
        rows = await write(name, params)
        if name == "reservations/renew_reservation":
            assert isinstance(await svc.release(held.id), Reservation)  # lands between the write and any read
        return rows

    monkeypatch.setattr(gateway, "write", then_release)
    renewed = await svc.renew(held.id, 120)
    assert isinstance(renewed, Reservation), renewed
    assert (renewed.state, renewed.expires_at) == ("active", clock.now + 120)
    assert sorted(g.uuid for g in renewed.gpus) == sorted(g.uuid for g in held.gpus)
    monkeypatch.undo()
    ended = await svc.get(held.id)
    assert ended is not None and ended.state == "released"
    await invariants(gateway, clock.now)


async def test_renew_racing_takeover_never_leaves_both_live(gateway: Gateway) -> None:
    """60 concurrent renew-vs-takeover pairs: whoever wins, the GPUs have exactly one live owner."""
    cluster = await load(gateway, "l40s:hosts=4")
    gpus = [g.uuid for h in cluster.hosts for g in h.gpus]
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    late = ReservationService(gateway, clock=lambda: clock.now + TTL + 1)  # sees every first lease lapsed
    for round_ in range(4):
        pairs = [gpus[i : i + 1] for i in range(round_ % 2, len(gpus), 2)][:15]
        owners = [await svc.reserve(holder=f"a{round_}-{i}", gpus=p, ttl_s=TTL) for i, p in enumerate(pairs)]
        assert all(isinstance(o, Reservation) for o in owners)
        results = await asyncio.gather(
            *(svc.renew(o.id, 10 * TTL) for o in owners if isinstance(o, Reservation)),
            *(late.reserve(holder=f"b{round_}-{i}", gpus=p, ttl_s=TTL) for i, p in enumerate(pairs)),
        )
        renews, takeovers = results[: len(owners)], results[len(owners) :]
        for owner, renew, takeover in zip(owners, renews, takeovers, strict=True):
            assert isinstance(owner, Reservation)
            # Never both: a successful renew means the takeover found the GPU held, and vice versa.
            assert not (isinstance(renew, Reservation) and isinstance(takeover, Reservation)), (renew, takeover)
        for r in [*owners, *takeovers]:
            if isinstance(r, Reservation):
                await svc.release(r.id)
        await invariants(gateway, clock.now)


async def test_one_idempotency_key_from_many_clients_gives_one_reservation(gateway: Gateway) -> None:
    """Concurrent retries with one key: one reservation, the same answer for all, no error.

    On Neo4j the unique-constraint failure says "already exists", not "unique": the race was
    recognised by that word and escaped as an unexpected error. It is now mapped by error code.
    """
    await load(gateway, "l40s:hosts=2")
    svc = ReservationService(gateway)
    outcomes = await asyncio.gather(
        *(svc.reserve(holder="job", request=parse_request("1xL40S"), idempotency_key="same-key") for _ in range(12))
    )
    assert all(isinstance(o, Reservation) for o in outcomes), outcomes
    assert len({o.id for o in outcomes if isinstance(o, Reservation)}) == 1
    live = await svc.get_many(keys=["same-key"])
    assert len(live) == 1 and len(live[0].gpus) == 1


async def test_counters_agree_after_concurrent_reservations_in_one_domain(gateway: Gateway) -> None:
    """Many writers on one NVL72 domain and one set of leaves at once: the stored free counters
    equal a recount from the GPUs afterwards (stale recounts under read committed would not)."""
    cluster = await load(gateway, "nvl72:racks=1")
    svc = ReservationService(gateway)
    outcomes = await asyncio.gather(
        *(svc.reserve(holder=f"c{i}", request=parse_request("2xGB200 nvlink=full-mesh")) for i in range(24))
    )
    won = [o for o in outcomes if isinstance(o, Reservation)]
    assert won  # (how many win depends on the race: losers retry a bounded number of times)
    await asyncio.gather(*(svc.release(r.id) for r in won[::2]))
    drift = await gateway.read("counter_drift")
    assert drift == [], drift
    # Failed GPUs are never free (#17): the domain counts only the others.
    total = sum(1 for h in cluster.hosts for g in h.gpus if g.health != "failed")
    domains = await gateway.read("largest_free_domains", {"top": 72, "limit": 10})
    assert sum(int(d["free"]) for d in domains) == total - 2 * len(won[1::2])


async def test_start_up_repairs_counters_that_disagree(gateway: Gateway) -> None:
    """A counter left wrong (a crash of an older version between its statements, or a hand edit)
    is found and recounted when the store is opened."""
    from graphsvc.ingest.counters import repair_counters
    from tests.stores import adhoc

    await load(gateway, "superpod-h100:sus=1")
    assert await gateway.read("counter_drift") == []
    await gateway.backend.run(
        adhoc("corrupt", "MATCH (h:Host) WITH h ORDER BY h.name LIMIT 3 SET h.free_gpus = 1 "
              "WITH count(h) AS n MATCH (s:Switch {tier: 'leaf'}) SET s.free_gpus = 5"),
        {},
        write=True,
        timeout_s=60,
    )  # fmt: skip
    assert len(await gateway.read("counter_drift")) > 3
    repair = await repair_counters(gateway)
    assert repair.hosts == 3 and repair.leaves > 0
    assert await gateway.read("counter_drift") == []


async def test_concurrent_writers_on_one_scalable_unit_never_deadlock(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """Every reservation in a scalable unit locks the same rail leaves: taken in one order they
    queue, and Neo4j reports no deadlock at all. (Locks taken by setting a key to itself,
    `SET x.name = x.name`, deadlocked here dozens of times per run and ran out of retries.)"""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway, default_ttl_s=600)
    held: list[Reservation] = []

    async def client(n: int) -> None:
        for size in (1, 2, 4, 8, 2, 1):
            out = await svc.reserve(holder=f"c{n}", request=parse_request(f"{size}xH100 nvlink=full-mesh"))
            if isinstance(out, Reservation):
                held.append(out)

    with caplog.at_level(logging.WARNING, logger="neo4j"):
        await asyncio.gather(*(client(n) for n in range(16)))
        await asyncio.gather(*(svc.release(r.id) for r in held))
    deadlocks = [r for r in caplog.records if "Deadlock" in r.getMessage() or "deadlock" in r.getMessage()]
    assert held and deadlocks == [], deadlocks[:3]
    assert await gateway.read("counter_drift") == []
