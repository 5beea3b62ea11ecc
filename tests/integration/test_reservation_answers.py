"""What each caller is told matches what committed, on both stores (a fault probe's cases).

- Two first attempts with one idempotency key (a client retrying while its first attempt still
  runs) where only one fits: the loser lost on capacity before it reached the key's unique
  constraint, and answered Infeasible or Conflict while its key held the GPUs.
- A group-committed batch that needs two statements (two models) whose second fails (the store
  went away): the requests the first statement committed were told the store error too, and a
  retry without a key took a second reservation.
- Renewing a preemption still in its grace period answered LeaseExpired, and the preemption then
  completed with a lease its holder had stopped renewing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from graphsvc.ingest.service import ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.events import Event
from graphsvc.reservations.service import Conflict, Reservation, ReservationService
from graphsvc.store.errors import StoreError, StoreUnavailableError
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.helpers import h100, l40
from tests.integration.test_reservations import Clock


@pytest.mark.parametrize("form", ["request", "gpus"])
async def test_the_loser_of_a_key_race_gets_the_keys_reservation(gateway: Gateway, form: str) -> None:
    cluster = await load(gateway, "l40s:hosts=1")  # one host, four GPUs: room for one attempt
    uuids = [g.uuid for g in cluster.hosts[0].gpus]
    svc = ReservationService(gateway)
    args: dict[str, Any] = {"request": parse_request("4xL40S")} if form == "request" else {"gpus": uuids}
    both = await asyncio.gather(*(svc.reserve(holder="h", ttl_s=600, idempotency_key="K", **args) for _ in range(2)))
    assert all(isinstance(o, Reservation) for o in both), both
    assert len({o.id for o in both if isinstance(o, Reservation)}) == 1


async def test_the_loser_of_a_key_race_with_preemption_allowed_gets_the_keys_reservation(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    await svc.reserve(holder="victim", request=parse_request("4xL40S"), ttl_s=600, preemptible=True)
    both = await asyncio.gather(
        *(
            svc.reserve(
                holder="u", request=parse_request("4xL40S"), ttl_s=600, priority=5, allow_preemption=True,
                idempotency_key="K",
            )
            for _ in range(2)
        )
    )  # fmt: skip
    assert all(isinstance(o, Reservation) for o in both), both
    assert len({o.id for o in both if isinstance(o, Reservation)}) == 1


async def test_a_list_of_gpus_with_preemption_allowed_answers_as_without(gateway: Gateway) -> None:
    """A list of GPUs is never preempted for: held ones are a Conflict either way (this stop's
    restructuring of `reserve` raised on it, a 500; a review's case)."""
    cluster = await load(gateway, "l40s:hosts=1")
    uuids = [g.uuid for g in cluster.hosts[0].gpus]
    svc = ReservationService(gateway)
    await svc.reserve(holder="a", gpus=uuids[:1], ttl_s=600, preemptible=True)
    answer = await svc.reserve(holder="b", gpus=uuids[:1], ttl_s=600, priority=5, allow_preemption=True)
    assert isinstance(answer, Conflict), answer


async def test_a_batch_whose_second_statement_fails_answers_what_the_first_committed(gateway: Gateway) -> None:
    await ingest_host(gateway, h100("h100-a"))
    await ingest_host(gateway, l40("l40s-a"))
    svc = ReservationService(gateway)
    await svc.engine.facts.fresh()
    real_write = gateway.write
    batches: list[str] = []

    async def write(name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        if name.startswith("reservations/reserve_in_host_batch"):
            batches.append(name)
            if len(batches) == 2:  # the store goes away after the batch's first statement committed
                raise StoreUnavailableError("injected: the store is unreachable")
        return await real_write(name, params)

    async def one(holder: str, text: str) -> Reservation | StoreError | object:
        try:
            return await svc.reserve(holder=holder, request=parse_request(text), ttl_s=3600)
        except StoreError as err:
            return err

    gateway.write = write  # type: ignore[method-assign]
    try:
        # One batch, one statement per model: the two L40S requests, then the H100 one (which fails).
        outcomes = await asyncio.gather(one("warm", "1xL40S"), one("l40s-job", "1xL40S"), one("h100-job", "1xH100"))
    finally:
        gateway.write = real_write  # type: ignore[method-assign]
    assert len(batches) == 2, batches
    stored = {r.holder for r in await svc.page(None, "active", 100, None)}
    for holder, outcome in zip(["warm", "l40s-job", "h100-job"], outcomes, strict=True):
        assert isinstance(outcome, Reservation) == (holder in stored), (holder, outcome)
    assert sum(isinstance(o, StoreUnavailableError) for o in outcomes) == 1


async def test_renewing_a_pending_preemption_answers_it_as_it_is(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    preemption = elastic_for(svc).preemption
    await svc.reserve(holder="victim", request=parse_request("4xL40S"), ttl_s=600, preemptible=True)
    pending = await preemption.preempt(
        holder="urgent", request=parse_request("4xL40S"), priority=5, grace_s=300, ttl_s=600
    )
    pid = pending.reservation.id  # type: ignore[union-attr]
    renewed = await svc.renew(pid, 600)
    assert isinstance(renewed, Reservation) and renewed.state == "pending", renewed
    clock.now += 301
    await preemption.tick()
    after = await svc.get(pid)
    assert after is not None and after.state == "active"


async def test_a_reaper_statement_that_fails_loses_no_earlier_expired_event(gateway: Gateway) -> None:
    """The reaper ends lapsed leases a page per statement; when a later page's statement fails
    (the store went away), the pages already committed still announce `reservation.expired`,
    exactly once (they were told only after every page, and the next run no longer finds them)."""
    await load(gateway, "l40s:hosts=2")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, group_commit=False)
    told: list[str] = []

    async def observe(event: Event) -> None:
        if event.kind == "reservation.expired":
            told.append(event.subject)

    svc.events.observers.append(observe)
    made = []
    for n in range(3):
        one = await svc.reserve(holder=f"job{n}", request=parse_request("1xL40S"), ttl_s=10)
        assert isinstance(one, Reservation), one
        made.append(one.id)
    clock.now += 60
    real_write = gateway.write
    pages = 0

    async def flaky(name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        nonlocal pages
        if name == "reservations/expire_reservations":
            pages += 1
            if pages == 2:
                raise StoreUnavailableError("injected: the store went away")
        return await real_write(name, params)

    gateway.write = flaky  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreUnavailableError):
            await svc.expire_due(batch=1)
    finally:
        gateway.write = real_write  # type: ignore[method-assign]
    await svc.expire_due(batch=1)
    assert sorted(told) == sorted(made)  # each once: one was never told
