"""Checkpoint-aware preemption with a grace period, on both stores, with an injected clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from topo_facts import HostFacts

from graphsvc.ingest.service import ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.events import Event
from graphsvc.reservations.preemption import Pending
from graphsvc.reservations.service import Infeasible, NotFound, Reservation, ReservationService, ValidationError
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load
from tests.integration.test_elastic_resize import consistent
from tests.integration.test_reservations import Clock, invariants

HOUR = 3600.0
BIG = parse_request("64xGB200 nvlink=full-mesh")


async def rack_gpus(gw: Gateway, cluster: SyntheticCluster, rack: str) -> list[str]:
    hosts = [h.hostname for h in cluster.hosts if f"-{rack}-" in h.hostname]
    rows = await gw.read("placement_host_gpus", {"hosts": hosts})
    return sorted(r["uuid"] for r in rows if (r.get("health") or "ok") not in ("failed", "degraded"))


async def states(svc: ReservationService, ids: list[str]) -> dict[str, str]:
    return {r.id: r.state for r in await svc.get_many(ids=ids)}


async def two_racks(gw: Gateway, clock: Clock, svc: ReservationService) -> tuple[list[str], list[str]]:
    """Rack 1: two 32-GPU jobs that never checkpointed in 10 h. Rack 2: eight 8-GPU jobs that
    checkpointed a minute ago. Neither rack has 64 GPUs free."""
    cluster = await load(gw, "nvl72:racks=2")
    preemption = elastic_for(svc).preemption
    big, small = [], []
    r1, r2 = await rack_gpus(gw, cluster, "rack01"), await rack_gpus(gw, cluster, "rack02")
    for i in range(2):
        made = await svc.reserve(holder=f"big{i}", gpus=r1[32 * i : 32 * i + 32], ttl_s=86400, preemptible=True)
        assert isinstance(made, Reservation), made
        big.append(made.id)
    for i in range(8):
        made = await svc.reserve(holder=f"small{i}", gpus=r2[8 * i : 8 * i + 8], ttl_s=86400, preemptible=True)
        assert isinstance(made, Reservation), made
        small.append(made.id)
    clock.now += 10 * HOUR
    for rid in small:
        renewed = await preemption.renew(rid, 86400, last_checkpoint_at=clock.now - 60, checkpoint_every_s=1800)
        assert isinstance(renewed, Reservation), renewed
    return big, small


async def pending_on_rack2(gateway: Gateway) -> tuple[Clock, ReservationService, list[str], Pending]:
    """The two racks, and a 64-GPU preemption of rack 2's eight jobs pending for its 600 s grace."""
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    _big, small = await two_racks(gateway, clock, svc)
    out = await elastic_for(svc).preemption.preempt(holder="urgent", request=BIG, priority=9, grace_s=600, ttl_s=3600)
    assert isinstance(out, Pending)
    return clock, svc, small, out


async def test_plan_picks_the_least_lost_work_and_says_so(gateway: Gateway) -> None:
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    big, small = await two_racks(gateway, clock, svc)
    plan = await svc.preemption_plan(BIG, priority=9)
    assert plan.feasible and sorted(v.reservation for v in plan.victims) == sorted(small)
    assert "least lost work" in plan.reason
    assert plan.lost_gpu_seconds == 64 * (60 + 300)
    by_priority = await svc.preemption_plan(BIG, priority=9, policy="priority")
    assert sorted(v.reservation for v in by_priority.victims) == sorted(big)  # fewest victims
    assert by_priority.lost_gpu_seconds > 100 * plan.lost_gpu_seconds


async def test_victims_get_a_grace_period_then_the_gpus_move(gateway: Gateway) -> None:
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    _big, small = await two_racks(gateway, clock, svc)
    events: list[Event] = []

    async def record(e: Event) -> None:
        events.append(e)

    svc.events.observers.append(record)
    preemption = elastic_for(svc).preemption
    out = await preemption.preempt(holder="urgent", request=BIG, priority=9, grace_s=120, ttl_s=3600)
    assert isinstance(out, Pending), out
    warned = sorted(e.subject for e in events if e.kind == "reservation.preempting")
    assert warned == sorted(small) and '"graceSeconds": 120' in events[0].detail
    assert await states(svc, small) == {r: "active" for r in small}
    again = await svc.preemption_plan(BIG, priority=9)  # promised victims are not offered twice
    assert again.feasible and not {v.reservation for v in again.victims} & set(small)
    await consistent(gateway, clock.now)
    clock.now += 60
    assert await preemption.tick() == []  # still in the grace period
    released = await svc.release(small[0])  # one victim checkpoints and leaves early
    assert isinstance(released, Reservation)
    assert await states(svc, [out.reservation.id]) == {out.reservation.id: "pending"}
    clock.now += 61
    assert await preemption.tick() == [out.reservation.id]
    moved = await svc.get(out.reservation.id)
    assert moved is not None and moved.state == "active" and len([g for g in moved.gpus if g.held]) == 64
    ended = await states(svc, small)
    assert ended[small[0]] == "released" and all(ended[r] == "preempted" for r in small[1:])
    assert sorted(e.subject for e in events if e.kind == "reservation.preempted") == sorted(small[1:])
    await consistent(gateway, clock.now)


async def test_the_gpus_move_as_soon_as_every_victim_released(gateway: Gateway) -> None:
    clock, svc, small, out = await pending_on_rack2(gateway)
    for rid in small:
        await svc.release(rid)
    moved = await svc.get(out.reservation.id)
    assert moved is not None and moved.state == "active"  # no wait for the deadline
    await consistent(gateway, clock.now)


async def test_victims_released_together_read_the_pending_preemptions_once_or_twice(gateway: Gateway) -> None:
    """Each release looks for preemptions its victim completes (one read); releases ending
    together share that look: one runs, the others ask for one more after it (so none is
    missed), and the GPUs have moved once they have all returned."""
    clock, svc, small, out = await pending_on_rack2(gateway)
    before = gateway.stats["reservations/pending_ready"].calls if "reservations/pending_ready" in gateway.stats else 0
    released = await asyncio.gather(*(svc.release(rid) for rid in small))
    assert all(isinstance(r, Reservation) for r in released)
    assert gateway.stats["reservations/pending_ready"].calls - before <= 2 < len(small)
    moved = await svc.get(out.reservation.id)
    assert moved is not None and moved.state == "active"
    await consistent(gateway, clock.now)


async def test_a_release_no_preemption_waits_on_reads_no_pending_preemptions(gateway: Gateway) -> None:
    """The group-committed release reads its reservation's preempt_by under its lock: a release
    that no preemption names as a victim wakes nothing (no pending_ready read, its event says
    so); a victim's release still wakes the look, and the GPUs move once every victim is gone."""
    clock, svc, small, out = await pending_on_rack2(gateway)
    bystander = await svc.reserve(holder="other", request=parse_request("4xGB200"), ttl_s=3600)
    assert isinstance(bystander, Reservation), bystander
    events: list[Event] = []

    async def record(e: Event) -> None:
        if e.kind == "reservation.released":
            events.append(e)

    svc.events.observers.insert(0, record)
    before = gateway.stats["reservations/pending_ready"].calls if "reservations/pending_ready" in gateway.stats else 0
    assert isinstance(await svc.release(bystander.id), Reservation)
    assert gateway.stats.get("reservations/pending_ready") is None or (
        gateway.stats["reservations/pending_ready"].calls == before
    )
    assert [(e.subject, e.awaited) for e in events] == [(bystander.id, False)]
    for rid in small:
        assert isinstance(await svc.release(rid), Reservation)
    assert [(e.subject, e.awaited) for e in events[1:]] == [(rid, True) for rid in small]
    assert gateway.stats["reservations/pending_ready"].calls > before
    moved = await svc.get(out.reservation.id)
    assert moved is not None and moved.state == "active"
    await consistent(gateway, clock.now)


def recorded(svc: ReservationService) -> list[Event]:
    events: list[Event] = []

    async def record(e: Event) -> None:
        events.append(e)

    svc.events.observers.append(record)
    return events


def withdrawn(events: list[Event], by: str) -> list[str]:
    """The victims told that preemption `by` no longer holds (each once)."""
    return sorted(e.subject for e in events if e.kind == "reservation.preemption_withdrawn" and e.detail == by)


async def test_a_preemption_whose_gpus_were_taken_fails_visibly(gateway: Gateway) -> None:
    clock, svc, small, out = await pending_on_rack2(gateway)
    events = recorded(svc)
    preemption = elastic_for(svc).preemption
    first = await svc.get(small[0])
    assert first is not None
    await svc.release(small[0])
    grab = await svc.reserve(holder="sneaky", gpus=[g.uuid for g in first.gpus], ttl_s=3600)
    assert isinstance(grab, Reservation)
    clock.now += 601
    assert await preemption.tick() == []
    failed = await svc.get(out.reservation.id)
    assert failed is not None and failed.state == "failed"
    assert set((await states(svc, small[1:])).values()) == {"active"}
    assert withdrawn(events, out.reservation.id) == sorted(small[1:])  # the released victim is not told
    again = await preemption.preempt(holder="urgent2", request=BIG, priority=9, grace_s=0, ttl_s=3600)
    assert isinstance(again, Reservation)  # the victims are free to be chosen again; grace 0 moves at once
    await consistent(gateway, clock.now)


async def test_releasing_a_pending_preemption_cancels_it_and_its_victims_keep_their_gpus(gateway: Gateway) -> None:
    """A preemption in its grace period holds no GPU yet. Its release answered "pending", left the
    victims promised to it, and the GPUs moved when the grace ran out (a probe's case)."""
    clock, svc, small, out = await pending_on_rack2(gateway)
    events = recorded(svc)
    released = await svc.release(out.reservation.id)
    assert isinstance(released, Reservation) and released.state == "released" and released.ended_at == clock.now
    assert [e.kind for e in events if e.subject == out.reservation.id] == ["reservation.released"]
    assert withdrawn(events, out.reservation.id) == sorted(small)
    victims = await svc.get_many(ids=small)
    assert all(v.state == "active" and v.preempt_by is None for v in victims)
    clock.now += 601
    assert await elastic_for(svc).preemption.tick() == []
    assert set((await states(svc, small)).values()) == {"active"}
    again = await svc.release(out.reservation.id)  # idempotent, as any release of an ended one
    assert isinstance(again, Reservation) and again.state == "released"
    assert len([e for e in events if e.subject == out.reservation.id]) == 1
    await consistent(gateway, clock.now)


def before_first(gateway: Gateway, target: str, step: Callable[[], Awaitable[object]]) -> None:
    """Run `step` once, just before the gateway's first write of statement `target` (a race's
    other side landing between a read and the write that acts on it)."""
    real = gateway.write

    async def write(name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        if name == target:
            gateway.write = real  # type: ignore[method-assign]
            await step()
        return await real(name, params)

    gateway.write = write  # type: ignore[method-assign]


async def test_a_release_racing_the_grace_tick_releases_what_the_tick_gave(gateway: Gateway) -> None:
    """The release read the preemption pending; the tick completed it before end_preemption ran.
    The release answered it active, holding 64 GPUs (a review's case): it releases it now."""
    clock, svc, small, out = await pending_on_rack2(gateway)
    preemption = elastic_for(svc).preemption
    before_first(gateway, "reservations/end_preemption", lambda: preemption.complete(out.reservation.id))
    released = await svc.release(out.reservation.id)
    assert isinstance(released, Reservation) and released.state == "released"
    assert not any(g.held for g in released.gpus)
    assert set((await states(svc, small)).values()) == {"preempted"}
    await consistent(gateway, clock.now)


async def test_the_grace_tick_racing_a_release_announces_no_failure(gateway: Gateway) -> None:
    """The tick read the preemption pending; its holder released it before complete_preemption
    ran. The tick announced `reservation.preemption_failed` for a released reservation."""
    clock, svc, small, out = await pending_on_rack2(gateway)
    events = recorded(svc)
    before_first(gateway, "reservations/complete_preemption", lambda: svc.release(out.reservation.id))
    done = await elastic_for(svc).preemption.complete(out.reservation.id)
    assert isinstance(done, ValidationError)
    assert [e.kind for e in events if e.subject == out.reservation.id] == ["reservation.released"]
    assert withdrawn(events, out.reservation.id) == sorted(small)  # once: by the release, not the tick
    assert set((await states(svc, small)).values()) == {"active"}
    await consistent(gateway, clock.now)


async def test_bad_progress_reports_are_validation_errors(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    made = await svc.reserve(holder="j", request=parse_request("1xL40S"), ttl_s=60)
    assert isinstance(made, Reservation)
    preemption = elastic_for(svc).preemption
    assert isinstance(await preemption.renew(made.id, 60, checkpoint_every_s=60), ValidationError)
    assert isinstance(await preemption.renew(made.id, 60, last_checkpoint_at=float("nan")), ValidationError)
    assert isinstance(
        await preemption.renew(made.id, 60, last_checkpoint_at=1.0, checkpoint_every_s=0), ValidationError
    )


async def test_a_checkpoint_before_the_job_started_counts_from_its_start(gateway: Gateway) -> None:
    """`lastCheckpointAt: 0` was stored as the epoch: the plan costed the victim's preemption at
    millions of GPU-hours and ranked it the costliest (a probe's case)."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await svc.reserve(holder="j", request=parse_request("1xL40S"), ttl_s=7200, preemptible=True)
    assert isinstance(made, Reservation)
    clock.now += 3600
    assert isinstance(await elastic_for(svc).preemption.renew(made.id, 7200, last_checkpoint_at=0.0), Reservation)
    rows = await gateway.read("reservations/reservation_get", {"ids": [made.id], "keys": []})
    assert rows[0]["reservation"]["last_checkpoint_at"] == made.created_at


async def test_elastic_properties_are_declared_in_the_schema(gateway: Gateway) -> None:
    from graphsvc.reservations.phases import set_phases
    from graphsvc.store.schema import graph_schema
    from tests.integration.test_schema_conformance import PY_TYPES

    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    _big, small = await two_racks(gateway, clock, svc)
    elastic = elastic_for(svc)
    assert await set_phases(elastic.resize, small[0], "a", ["a=8xGB200", "b=4xGB200"]) is None
    await elastic.resize.resize(small[0], gpus=4)
    out = await elastic.preemption.preempt(holder="urgent", request=BIG, priority=9, grace_s=60, ttl_s=3600)
    assert isinstance(out, Pending)
    node = graph_schema().nodes["Reservation"]
    for row in await gateway.read("export_nodes", {"limit": 1_000_000}):
        if row["labels"] == ["Reservation"]:
            for prop, value in row["props"].items():
                assert prop in node.properties, f"Reservation.{prop} is not declared"
                assert isinstance(value, PY_TYPES[node.properties[prop]]), f"Reservation.{prop}={value!r}"


async def test_a_plan_combines_the_freed_gpus_with_free_ones_next_to_them(gateway: Gateway) -> None:
    """One preemptible job holds half an NVL72 rack (9 trays); the other half is free. 64 GPUs in
    one NVLink domain need the victim's GPUs and the free trays together: the plan searches the
    victims' neighbours (same domain, same leaves), not only the victims' hosts."""
    cluster = await load(gateway, "nvl72:racks=1")
    svc = ReservationService(gateway)
    trays = sorted(h.hostname for h in cluster.hosts)[:9]
    rows = await gateway.read("placement_host_gpus", {"hosts": trays})
    held = sorted(r["uuid"] for r in rows if (r.get("health") or "ok") not in ("failed", "degraded"))
    victim = await svc.reserve(holder="half", gpus=held, ttl_s=3600, preemptible=True)
    assert isinstance(victim, Reservation), victim
    plan = await svc.preemption_plan(BIG, priority=9)
    assert plan.feasible, plan.reason
    assert [v.reservation for v in plan.victims] == [victim.id] and len(plan.gpus) == 64
    assert set(plan.hosts) - set(trays), "the free trays are part of the placement"


async def test_a_plan_spans_leaves_when_each_leaf_frees_too_little(gateway: Gateway) -> None:
    """Two scalable units, two hosts each; under each unit's leaves one host is held by a
    preemptible job, the other by a job that cannot be preempted. 16 GPUs, 8 per host, need both
    victims' hosts: under different leaves (3 hops through a spine), so no leaf group alone has
    them; the plan finds the placement across the leaves (#18)."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 2, seed=3)
    add_spines(c, leaves, prefix="spine", sus=2)
    c.hosts = [h for h in c.hosts if h.hostname.endswith(("-n01", "-n02"))]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in {h.hostname for h in c.hosts}]
    await load(gateway, c)
    svc = ReservationService(gateway)
    gpus = {h.hostname: [g.uuid for g in h.gpus] for h in c.hosts}
    victims = []
    for host in ("h100-su1-n01", "h100-su2-n01"):
        made = await svc.reserve(holder=f"v-{host}", gpus=gpus[host], ttl_s=3600, preemptible=True)
        assert isinstance(made, Reservation), made
        victims.append(made.id)
    for host in ("h100-su1-n02", "h100-su2-n02"):
        assert isinstance(await svc.reserve(holder=f"keep-{host}", gpus=gpus[host], ttl_s=3600), Reservation)
    request = parse_request("16xH100 per-host=8")
    plan = await svc.preemption_plan(request, priority=9)
    assert plan.feasible, plan.reason
    assert sorted(v.reservation for v in plan.victims) == sorted(victims)
    assert sorted(plan.hosts) == ["h100-su1-n01", "h100-su2-n01"]
    assert sorted(plan.gpus) == sorted(gpus["h100-su1-n01"] + gpus["h100-su2-n01"])
    assert not (await svc.preemption_plan(parse_request("16xH100 per-host=8 ib-hops<=1"), priority=9)).feasible
    taken = await svc.reserve(holder="urgent", request=request, priority=9, allow_preemption=True, ttl_s=3600)
    assert isinstance(taken, Reservation) and len(taken.gpus) == 16, taken
    assert await states(svc, victims) == {v: "preempted" for v in victims}
    await consistent(gateway, time.time())


async def test_a_victim_whose_lease_ran_out_ends_expired_not_preempted(gateway: Gateway) -> None:
    """The preemption ended a victim whose lease had lapsed as preempted at its own time, where
    every reader already said expired at the lease's end (a helper's trial)."""
    clock, svc, small, pending = await pending_on_rack2(gateway)
    events: list[Event] = []

    async def record(e: Event) -> None:
        events.append(e)

    svc.events.observers.append(record)
    victim = await svc.get(small[0])
    assert victim is not None
    clock.now = victim.expires_at + 1  # its lease ran out first; the grace ran out too
    before = await svc.read(victim.id)
    assert await elastic_for(svc).preemption.tick() == [pending.reservation.id]
    after = await svc.read(victim.id)
    assert before is not None and after is not None
    assert (after.state, after.ended_at) == (before.state, before.ended_at) == ("expired", victim.expires_at)
    ends = {e.subject: e.kind for e in events if e.subject in small}
    assert ends[victim.id] == "reservation.expired" and len(ends) == len(small)
    await invariants(gateway, clock.now)


async def test_a_victim_whose_host_stopped_reporting_a_gpu_is_preempted(gateway: Gateway) -> None:
    """The victim holds 7 of its 8 GPUs: its host's facts no longer list the eighth. The statement
    that moves the GPUs compared what victims hold with what they were granted, so the preemption
    failed every time; with no grace, `preempt` answered that failed reservation as pending (a
    probe's case). It compares with what they hold now, read under their locks."""
    cluster = await load(gateway, "dgx1:hosts=1")
    facts = cluster.hosts[0]
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    victim = await svc.reserve(holder="low", gpus=[g.uuid for g in facts.gpus], ttl_s=3600, preemptible=True)
    assert isinstance(victim, Reservation)
    gone = facts.gpus[7]
    doc = facts.model_dump()
    doc["gpus"] = [g for g in doc["gpus"] if g["uuid"] != gone.uuid]
    for g in doc["gpus"]:
        g["nvlinks"] = [link for link in g["nvlinks"] if link["peer_id"] not in (gone.uuid, gone.pci_bus_id)]
    doc["gpu_nic_affinity"] = [a for a in doc["gpu_nic_affinity"] if a["gpu_uuid"] != gone.uuid]
    doc["collected_at"] = facts.collected_at + timedelta(seconds=1)
    assert (await ingest_host(gateway, HostFacts.model_validate(doc))).applied
    out = await elastic_for(svc).preemption.preempt(
        holder="high", request=parse_request("4xV100"), priority=10, grace_s=0, ttl_s=600
    )
    assert isinstance(out, Reservation) and out.state == "active" and len(out.gpus) == 4, out
    assert (await states(svc, [victim.id])) == {victim.id: "preempted"}
    await consistent(gateway, clock.now)


async def test_a_preemption_that_fails_at_once_is_not_answered_pending(gateway: Gateway) -> None:
    """With no grace, a preemption whose GPUs were taken between its plan and its move ended
    `failed`, and `preempt` answered it as a pending reservation."""
    clock, svc, small, _out = await pending_on_rack2(gateway)
    preemption = elastic_for(svc).preemption
    real = preemption.complete

    async def taken_meanwhile(pending_id: str) -> Reservation | NotFound | ValidationError:
        # Another preemption's GPUs: fail this one as complete() does when it finds them taken.
        await gateway.write("reservations/end_preemption", {"id": pending_id, "now": clock.now, "state": "failed"})
        return await real(pending_id)

    preemption.complete = taken_meanwhile  # type: ignore[method-assign]
    out = await preemption.preempt(holder="urgent2", request=BIG, priority=9, grace_s=0, ttl_s=3600)
    assert isinstance(out, Infeasible) and "taken meanwhile" in out.reasons[0].message, out
    assert set((await states(svc, small)).values()) == {"active"}
    await consistent(gateway, clock.now)


async def test_a_preemption_the_grace_tick_completed_first_is_answered_not_planned_again(gateway: Gateway) -> None:
    """With no grace the deadline is now: a tick run by any release may complete the preemption
    before `preempt` does. Its own completion then found it active, and `preempt` planned again:
    a second 64-GPU reservation, rack 1's jobs preempted too (a review's case)."""
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    big, small = await two_racks(gateway, clock, svc)
    preemption = elastic_for(svc).preemption
    begin = preemption._begin

    async def begin_then_tick(*args: Any, **kwargs: Any) -> Pending | None:
        pending = await begin(*args, **kwargs)
        assert await preemption.tick()  # another release's tick completes it meanwhile
        return pending

    preemption._begin = begin_then_tick  # type: ignore[method-assign]
    out = await preemption.preempt(holder="urgent", request=BIG, priority=9, grace_s=0, ttl_s=3600)
    assert isinstance(out, Reservation) and out.state == "active" and len(out.gpus) == 64, out
    assert set((await states(svc, big)).values()) == {"active"}
    assert set((await states(svc, small)).values()) == {"preempted"}
    await consistent(gateway, clock.now)
