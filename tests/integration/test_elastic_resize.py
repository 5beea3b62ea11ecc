"""Elastic reservations on both stores: grow keeping the layout, shrink, ranks, races."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from typing import Any

from graphsvc.placement.request import parse_request
from graphsvc.reservations.events import Event
from graphsvc.reservations.resize import ElasticService, Live, Resized
from graphsvc.reservations.service import (
    Conflict,
    Infeasible,
    LeaseExpired,
    Reservation,
    ReservationService,
    ValidationError,
)
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservation_reads import lapsed
from tests.integration.test_reservations import Clock, invariants


async def consistent(gw: Gateway, now: float) -> None:
    """No GPU twice, every live reservation holds all its GPUs, none orphaned, counters right."""
    await invariants(gw, now)
    assert await gw.read("reservations/orphaned_gpus") == []
    assert await gw.read("counter_drift") == []


async def settled(gw: Gateway, svc: ReservationService, now: float) -> None:
    """`consistent` with no help from the lease job's sweep, on both stores: release, expiry and
    preemption read a reservation's GPUs again after its lock, so a grow committing between
    their first read and their locks cannot leave GPUs marked for an ended reservation
    (docs/reservations.md; made deterministic in test_elastic_race_neo4j.py). The sweep, kept as
    a safety net, must then find nothing."""
    from graphsvc.reservations.elastic import elastic_for

    await consistent(gw, now)
    assert await elastic_for(svc).sweep() == []


async def test_grow_keeps_the_host_then_the_rails(gateway: Gateway) -> None:
    cluster = await load(gateway, "superpod-h100:sus=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    elastic = ElasticService(svc)
    first = cluster.hosts[0]
    start = [g.uuid for g in first.gpus if g.index < 4]
    made = await svc.reserve(holder="job", gpus=start, ttl_s=600)
    assert isinstance(made, Reservation)
    events: list[Event] = []
    svc.events.publish = _recorder(events, svc.events.publish)  # type: ignore[method-assign]

    grown = await elastic.resize(made.id, gpus=8)
    assert isinstance(grown, Resized), grown
    assert grown.layout_kept and len(grown.reservation.gpus) == 8
    assert {g.host for g in grown.reservation.gpus} == {first.hostname}  # the other half of its host
    again = await elastic.resize(made.id, gpus=16)
    assert isinstance(again, Resized), again
    assert again.layout_kept
    by_host: dict[str, set[int]] = {}
    for g in again.reservation.gpus:
        by_host.setdefault(g.host, set()).add(g.index)
    assert len(by_host) == 2 and all(v == set(range(8)) for v in by_host.values())  # a whole host, all rails
    assert [e.kind for e in events] == ["reservation.resized", "reservation.resized"]
    await consistent(gateway, clock.now)


async def test_grow_on_two_gpus_per_nic_adds_what_was_asked(gateway: Gateway) -> None:
    """A DGX-1 has two GPUs per NIC. 1 -> 3 held 4 GPUs: the grow took every free GPU of the rails
    it chose, and answered Resized (a probe's case)."""
    cluster = await load(gateway, "dgx1:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await svc.reserve(holder="job", gpus=[cluster.hosts[0].gpus[0].uuid], ttl_s=600)
    assert isinstance(made, Reservation)
    for target in (3, 4, 8):
        grown = await ElasticService(svc).resize(made.id, gpus=target)
        assert isinstance(grown, Resized), grown
        assert len(grown.reservation.gpus) == target
    await consistent(gateway, clock.now)


async def test_shrink_by_service_choice_and_by_rank(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    elastic = ElasticService(svc)
    made = await svc.reserve(holder="job", request=parse_request("16xH100 per-host=8"), ttl_s=600)
    assert isinstance(made, Reservation)
    shrunk = await elastic.resize(made.id, gpus=8)
    assert isinstance(shrunk, Resized), shrunk
    assert len({g.host for g in shrunk.reservation.gpus}) == 1  # a whole host went back
    ranks = await elastic.live(made.id)
    assert isinstance(ranks, Live)
    order = ranks.rank_order
    dropped = await elastic.resize(made.id, remove_ranks=[7, 6])
    assert isinstance(dropped, Resized) and sorted(dropped.removed) == sorted(order[6:8])
    after = await elastic.live(made.id)
    assert isinstance(after, Live) and after.rank_order == order[:6]
    assert isinstance(await elastic.resize(made.id, remove_ranks=[9]), ValidationError)
    assert isinstance(await elastic.resize(made.id, gpus=0), ValidationError)
    await consistent(gateway, clock.now)
    released = await svc.release(made.id)
    assert isinstance(released, Reservation) and released.state == "released"
    await consistent(gateway, clock.now)


async def test_grow_that_cannot_keep_the_layout_is_infeasible(gateway: Gateway) -> None:
    await load(gateway, "nvl72:racks=1")
    svc = ReservationService(gateway)
    elastic = ElasticService(svc)
    made = await svc.reserve(holder="job", request=parse_request("60xGB200"), ttl_s=600)
    assert isinstance(made, Reservation)
    assert isinstance(await elastic.resize(made.id, gpus=72), Infeasible)  # 4 of the rack's GPUs are unhealthy
    grown = await elastic.resize(made.id, gpus=64)
    assert isinstance(grown, Resized) and grown.layout_kept


async def test_resize_of_an_ended_reservation_is_lease_expired(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    elastic = ElasticService(svc)
    made = await svc.reserve(holder="job", request=parse_request("1xL40S"), ttl_s=600)
    assert isinstance(made, Reservation)
    await svc.release(made.id)
    assert isinstance(await elastic.resize(made.id, gpus=2), LeaseExpired)


async def test_resize_of_a_lapsed_lease_says_it_expired(gateway: Gateway) -> None:
    """It said "the reservation is active" (the store's state before the reaper runs)."""
    _, svc, made = await lapsed(gateway, "1xL40S", ttl_s=60)
    out = await ElasticService(svc).resize(made.id, gpus=2)
    assert isinstance(out, LeaseExpired) and out.message == "the reservation is expired"
    assert out.expired_at == made.expires_at


async def test_resize_racing_reserve_and_preemption(gateway: Gateway) -> None:
    """Grows and shrinks race new reservations and preempting ones on one NVL72 domain and its
    leaves: whatever wins, no GPU is held twice, nothing is orphaned, the counters are right."""
    await load(gateway, "nvl72:racks=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    elastic = ElasticService(svc)
    rng = random.Random(18)
    jobs = []
    for i in range(8):
        made = await svc.reserve(holder=f"low{i}", request=parse_request("4xGB200"), ttl_s=600, preemptible=True)
        assert isinstance(made, Reservation)
        jobs.append(made.id)
    for round_ in range(3):
        ops: list[Coroutine[Any, Any, object]] = []
        for rid in jobs:
            ops.append(elastic.resize(rid, gpus=rng.choice([2, 6, 8])))
        for i in range(4):
            ops.append(svc.reserve(holder=f"new{round_}-{i}", request=parse_request("4xGB200"), ttl_s=600))
        ops.append(svc.reserve(holder=f"hi{round_}", request=parse_request("24xGB200"), ttl_s=600, priority=5,
                               allow_preemption=True))  # fmt: skip
        outcomes = await asyncio.gather(*ops)
        assert all(isinstance(o, (Resized, Reservation, Conflict, Infeasible, LeaseExpired)) for o in outcomes), (
            outcomes
        )
        await settled(gateway, svc, clock.now)
        for o in outcomes[len(jobs) :]:
            if isinstance(o, Reservation):
                await svc.release(o.id)
        await settled(gateway, svc, clock.now)


def _recorder(into: list[Event], publish):  # type: ignore[no-untyped-def]
    async def record(event: Event) -> None:
        into.append(event)
        await publish(event)

    return record


async def test_the_service_says_whether_the_next_phase_fits(gateway: Gateway) -> None:
    from graphsvc.reservations.phases import PhaseFit, next_phase, set_phases

    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    elastic = ElasticService(svc)
    made = await svc.reserve(holder="job", request=parse_request("8xH100"), ttl_s=600)
    assert isinstance(made, Reservation)
    plan = ["warmup=8xH100", "main=16xH100", "longctx=4096xH100", "eval=8xH100"]
    assert await set_phases(elastic, made.id, "warmup", plan) is None
    assert isinstance(await set_phases(elastic, made.id, "nope", plan), ValidationError)
    assert isinstance(await set_phases(elastic, made.id, "warmup", ["bad"]), ValidationError)
    # A resize in place honours a count and a model, nothing else: such a phase said it fit, and the
    # job grew on GPUs it did not ask for (a probe's case).
    for other in ("main=16xH100 mem>=200", "main=16xH100 site=aws", "main=16xH100 ib-hops<=1"):
        refused = await set_phases(elastic, made.id, "warmup", ["warmup=8xH100", other])
        assert isinstance(refused, ValidationError) and "in place" in refused.message, other
    assert await set_phases(elastic, made.id, "warmup", ["warmup=8xH100", "main=16xGB200"]) is None
    other_model = await next_phase(elastic, made.id)
    assert isinstance(other_model, PhaseFit) and not other_model.fits and "H100" in other_model.reason
    assert await set_phases(elastic, made.id, "warmup", plan) is None
    twice = await set_phases(elastic, made.id, "warmup", [*plan, "main=24xH100"])  # the second `main`: unreachable
    assert isinstance(twice, ValidationError) and twice.field == "phases" and "at most once" in twice.message
    fit = await next_phase(elastic, made.id)
    assert isinstance(fit, PhaseFit) and fit.fits and fit.next_phase == "main" and len(fit.add) == 8
    assert fit.layout_kept
    grown = await elastic.resize(made.id, gpus=16)
    assert isinstance(grown, Resized) and sorted(grown.added) == sorted(fit.add)  # where it said
    assert await set_phases(elastic, made.id, "main", plan) is None
    fit = await next_phase(elastic, made.id)
    assert isinstance(fit, PhaseFit) and not fit.fits and fit.next_phase == "longctx"


async def test_the_sweep_frees_gpus_left_marked_for_an_ended_reservation(gateway: Gateway) -> None:
    """The safety net: GPUs left marked for an ended reservation (what a write path that read a
    reservation's GPUs without reading them again after its lock would leave on Neo4j) come back."""
    from graphsvc.reservations.elastic import elastic_for
    from tests.stores import adhoc

    await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    made = await svc.reserve(holder="job", request=parse_request("2xL40S"), ttl_s=600)
    assert isinstance(made, Reservation)
    await svc.release(made.id)
    stray = made.gpus[0].uuid
    leave = adhoc("orphan", "MATCH (g:GPU {uuid: $u}) SET g.state = 'reserved', g.reservation = $r")
    await gateway.backend.run(leave, {"u": stray, "r": made.id}, write=True, timeout_s=60)
    assert await gateway.read("reservations/orphaned_gpus") != []
    assert await elastic_for(svc).sweep() == [stray]
    assert await gateway.read("reservations/orphaned_gpus") == []
    assert await gateway.read("counter_drift") == []
    assert await elastic_for(svc).sweep() == []


async def test_an_ended_reservation_lists_the_gpus_it_held_when_it_ended(gateway: Gateway) -> None:
    """Shrunk from 16 to 8 and released: its history is the 8 it held (the release's answer), not
    every GPU it ever held (16 on two hosts: a review's case), once another reservation took them."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway, clock=Clock())
    made = await svc.reserve(holder="job", request=parse_request("16xH100 per-host=8"), ttl_s=600)
    assert isinstance(made, Reservation)
    shrunk = await ElasticService(svc).resize(made.id, gpus=8)
    assert isinstance(shrunk, Resized)
    kept = sorted(g.uuid for g in shrunk.reservation.gpus)
    released = await svc.release(made.id)
    assert isinstance(released, Reservation) and sorted(g.uuid for g in released.gpus) == kept
    again = await svc.reserve(holder="next", gpus=[g.uuid for g in made.gpus])
    assert isinstance(again, Reservation)
    ended = await svc.get(made.id)
    assert ended is not None and sorted(g.uuid for g in ended.gpus) == kept
