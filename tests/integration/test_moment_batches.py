"""A moment's single-host reserves and releases in one group commit (ReservationService._write_moment),
on both stores: one statement for both where the store runs writes one at a time
(reserve_release_batch), two at once where writes run concurrently; each request answered on
its own, the releases standing when the reserves' statement cannot."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.errors import StoreBusyError, StoreConstraintError
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import invariants

TTL = 600
BOTH = ("reservations/reserve_release_batch", "reservations/reserve_release_batch_scan")


def calls(gw: Gateway, *names: str) -> int:
    return sum(gw.stats[n].calls for n in names if n in gw.stats)


async def reserve_eights(svc: ReservationService, holders: list[str]) -> list[Reservation]:
    made = await asyncio.gather(
        *(svc.reserve(holder=h, request=parse_request("8xH100 nvlink=full-mesh"), ttl_s=TTL) for h in holders)
    )
    assert all(isinstance(r, Reservation) for r in made), made
    return [r for r in made if isinstance(r, Reservation)]


async def test_a_moments_releases_free_the_gpus_its_reserves_take(gateway: Gateway) -> None:
    """Four releases and four reserves of a whole host at once, every request answered. Where
    writes run one at a time both kinds go in one statement, the releases first: with every host
    that can hold eight held (27 of the SU's 31: four have a degraded or failed GPU), the reserves
    get exactly the released hosts' GPUs. Where writes run concurrently the two statements race (a
    reserve may read before the releases commit), so four such hosts stay free there."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    held = await reserve_eights(svc, [f"old{i}" for i in range(27 if gateway.serial_writes else 23)])
    freed = held[:4]
    before = calls(gateway, "reservations/release_batch", *BOTH)
    outcomes = await asyncio.gather(
        *(svc.release(r.id) for r in freed),
        *(svc.reserve(holder=f"new{i}", request=parse_request("8xH100 nvlink=full-mesh"), ttl_s=TTL) for i in range(4)),
    )
    released, made = outcomes[:4], outcomes[4:]
    assert all(isinstance(r, Reservation) and r.state == "released" for r in released), released
    assert all(isinstance(r, Reservation) for r in made), made
    taken = sorted(g.uuid for r in made if isinstance(r, Reservation) for g in r.gpus)
    if gateway.serial_writes:
        assert taken == sorted(g.uuid for r in freed for g in r.gpus)
        assert calls(gateway, *BOTH) >= 1
    else:
        assert calls(gateway, *BOTH) == 0  # two statements, each locking in the one global order
    assert calls(gateway, "reservations/release_batch", *BOTH) > before
    await invariants(gateway, 0.0)
    assert await gateway.read("counter_drift") == []


async def test_a_duplicate_release_in_a_moment_answers_as_ended_once(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    ended: list[str] = []

    async def observe(event: Any) -> None:
        if event.kind == "reservation.released":
            ended.append(event.subject)

    svc.events.observers.append(observe)
    (first,) = await reserve_eights(svc, ["a"])
    outcomes = await asyncio.gather(
        svc.release(first.id),
        svc.release(first.id),
        svc.reserve(holder="b", request=parse_request("8xH100 nvlink=full-mesh"), ttl_s=TTL),
    )
    assert all(isinstance(o, Reservation) for o in outcomes), outcomes
    assert [o.state for o in outcomes[:2] if isinstance(o, Reservation)] == ["released", "released"]
    assert ended == [first.id]  # one event for the one release that ended it
    await invariants(gateway, 0.0)
    assert await gateway.read("counter_drift") == []


def failing(gw: Gateway, error: Exception) -> list[str]:
    """Makes the gateway fail the first statement that carries a batch of reserves with `error`
    (nothing of it written); the names of the statements so failed."""
    real = gw.write
    failed: list[str] = []

    async def write(name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        if not failed and name.startswith(("reservations/reserve_in_host_batch", *BOTH)):
            failed.append(name)
            raise error
        return await real(name, params)

    gw.write = write  # type: ignore[method-assign]
    return failed


async def test_an_idempotency_race_in_the_reserves_statement_leaves_the_moments_releases_done(
    gateway: Gateway,
) -> None:
    """A constraint error (an idempotency key raced in) writes nothing of its statement: the
    reserves go on alone, and releases that rode in it go by themselves; every request is answered."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    held = await reserve_eights(svc, ["a", "b"])
    failed = failing(gateway, StoreConstraintError("injected", "an idempotency key raced in"))
    outcomes = await asyncio.gather(
        *(svc.release(r.id) for r in held),
        *(svc.reserve(holder=f"new{i}", request=parse_request("4xH100 nvlink=full-mesh"), ttl_s=TTL) for i in range(2)),
    )
    assert len(failed) == 1 and (failed[0] in BOTH) == gateway.serial_writes
    assert all(isinstance(o, Reservation) for o in outcomes), outcomes
    assert [o.state for o in outcomes[:2] if isinstance(o, Reservation)] == ["released", "released"]
    for r in held:
        stored = await svc.get(r.id)
        assert stored is not None and stored.state == "released"
    await invariants(gateway, 0.0)
    assert await gateway.read("counter_drift") == []


async def test_a_failed_statement_answers_only_the_requests_it_carried(gateway: Gateway) -> None:
    """The store fails the reserves' statement: its reserves hear the error; releases that rode in
    it (one statement, where writes run one at a time) hear it too and ended nothing, while
    releases sent as their own statement (where writes run concurrently) are done."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    (held,) = await reserve_eights(svc, ["a"])
    failed = failing(gateway, StoreBusyError("injected: the store is busy"))

    async def answer(call: Any) -> object:
        try:
            return await call
        except StoreBusyError as err:
            return err

    release, reserve = await asyncio.gather(
        answer(svc.release(held.id)),
        answer(svc.reserve(holder="b", request=parse_request("2xH100 nvlink=full-mesh"), ttl_s=TTL)),
    )
    assert len(failed) == 1 and isinstance(reserve, StoreBusyError)
    assert (failed[0] in BOTH) == gateway.serial_writes  # the release rode in it where it could
    stored = await svc.get(held.id)
    assert stored is not None
    if failed[0] in BOTH:
        assert isinstance(release, StoreBusyError) and stored.state == "active"
    else:
        assert isinstance(release, Reservation) and stored.state == "released"
    await invariants(gateway, 0.0)
    assert await gateway.read("counter_drift") == []
