"""Reading a reservation as its holder sees it, on both stores: over GraphQL and REST, with its
GPUs' live readings, and `expired` from the moment its lease ran out (before the reaper runs)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from topo_facts.models import HostFacts

from graphsvc.ingest.service import ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.read.browse import Browse, LocatedGpu
from graphsvc.reservations.events import Event
from graphsvc.reservations.service import LeaseExpired, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import Clock, free_of, gql, invariants

GPUS = "gpus { uuid state health memoryMiB temperatureC scaleUpDomain host { name } }"


def counting(app: FastAPI) -> list[list[str]]:
    """Record each read of GPUs by uuid the GraphQL layer makes."""
    browse: Browse = app.state.services.browse
    calls: list[list[str]] = []
    real = browse.gpus_by_uuid

    async def spy(uuids: list[str]) -> list[LocatedGpu]:
        calls.append(list(uuids))
        return await real(uuids)

    browse.gpus_by_uuid = spy  # type: ignore[method-assign]
    return calls


def ended_reservations(svc: ReservationService) -> list[str]:
    """The reservations the service publishes an end event for (released, expired, preempted),
    one entry per event: each reservation ends exactly once."""
    ends: list[str] = []

    async def observe(event: Event) -> None:
        if event.kind in {"reservation.released", "reservation.expired", "reservation.preempted"}:
            ends.append(event.subject)

    svc.events.observers.append(observe)
    return ends


async def test_a_reservations_gpus_carry_their_live_readings(
    app: FastAPI, client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """`Reservation.gpus { health }` was always null: the reservation's read carries only which GPUs."""
    await load(gateway, "superpod-h100:sus=1")
    calls = counting(app)
    made = await gql(
        client,
        'mutation { reserve(input: {holder: "j", request: {gpus: 8, model: "H100", nvlink: FULL_MESH}}) '
        f"{{ ... on Reservation {{ id {GPUS} }} }} }}",
    )
    rid = made["reserve"]["id"]
    gpus: list[dict[str, Any]] = made["reserve"]["gpus"]
    assert len(gpus) == 8 and len(calls) == 1 and sorted(calls[0]) == sorted(g["uuid"] for g in gpus)
    for g in gpus:
        assert g["state"] == "reserved" and g["health"] and g["memoryMiB"] and g["scaleUpDomain"], g
    # Two reservations in one answer: one read of their GPUs, not one per reservation.
    await gql(client, 'mutation { reserve(input: {holder: "k", request: {gpus: 2, model: "H100"}}) { __typename } }')
    calls.clear()
    both = await gql(client, '{ reservations(filter: {state: "active"}) { gpus { ... on GPU { health } } } }')
    assert len(calls) == 1 and len(calls[0]) == 10
    assert [len(r["gpus"]) for r in both["reservations"]] in ([8, 2], [2, 8])
    assert all(g["health"] for r in both["reservations"] for g in r["gpus"])
    # Not asked for, not read: a scheduler reading which GPUs pays no second query.
    calls.clear()
    plain = await gql(client, f'{{ reservation(id: "{rid}") {{ gpus {{ uuid index state model vendor }} }} }}')
    assert len(plain["reservation"]["gpus"]) == 8 and calls == []
    # Once ended, the GPUs' state is no longer this reservation's: null, readings still there.
    await gql(client, f'mutation {{ release(id: "{rid}") {{ ... on Reservation {{ id }} }} }}')
    ended = await gql(client, f'{{ reservation(id: "{rid}") {{ state {GPUS} }} }}')
    assert ended["reservation"]["state"] == "released"
    assert all(g["state"] is None and g["health"] for g in ended["reservation"]["gpus"])


async def test_a_lapsed_lease_reads_expired_before_the_reaper_runs(
    app: FastAPI, client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """It read `active` (GPUs reserved) until the reaper's next run, while a renew already
    answered LeaseExpired and a reserve could take its GPUs."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    app.state.reservations.clock = clock
    made = (await client.post("/v1/reservations", json={"holder": "j", "request": "2xL40S", "ttlSeconds": 10})).json()
    live = (await client.post("/v1/reservations", json={"holder": "k", "request": "2xL40S", "ttlSeconds": 60})).json()
    assert made["kind"] == live["kind"] == "Reservation"
    rid = made["id"]
    seen = (await client.get(f"/v1/reservations/{rid}")).json()
    assert seen["state"] == "active" and seen["endedAt"] is None
    page = await gql(client, '{ reservations(filter: {state: "active"}) { id } }')
    assert {r["id"] for r in page["reservations"]} == {rid, live["id"]}

    clock.now += 11  # lapsed; no reaper has run, so the store still says active
    seen = (await client.get(f"/v1/reservations/{rid}")).json()
    assert seen["kind"] == "Reservation" and seen["state"] == "expired" and seen["endedAt"] == made["expiresAt"]
    one = await gql(client, f'{{ reservation(id: "{rid}") {{ state endedAt gpus {{ state }} }} }}')
    assert one["reservation"]["state"] == "expired" and one["reservation"]["endedAt"] == made["expiresAt"]
    assert [g["state"] for g in one["reservation"]["gpus"]] == [None, None]
    expired = await gql(client, '{ reservations(filter: {state: "expired"}) { id state } }')
    assert expired["reservations"] == [{"id": rid, "state": "expired"}]
    active = await gql(client, '{ reservations(filter: {state: "active"}) { id } }')
    assert active["reservations"] == [{"id": live["id"]}]
    # What a renew says agrees with what the read said.
    late = (await client.post(f"/v1/reservations/{rid}/renew", json={"ttlSeconds": 30})).json()
    assert late["kind"] == "LeaseExpired" and late["id"] == rid and late["endedAt"] == made["expiresAt"]


async def test_rest_renew_and_read(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """A scheduler on the REST fast path renews and reads without GraphQL."""
    await load(gateway, "l40s:hosts=1")
    made = (await client.post("/v1/reservations", json={"holder": "j", "request": "1xL40S", "ttlSeconds": 30})).json()
    renewed = (await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttlSeconds": 600})).json()
    assert renewed["kind"] == "Reservation" and renewed["expiresAt"] > made["expiresAt"]
    assert renewed["gpus"] == made["gpus"]
    default = (await client.post(f"/v1/reservations/{made['id']}/renew", json={})).json()
    assert default["kind"] == "Reservation"
    bodiless = (await client.post(f"/v1/reservations/{made['id']}/renew")).json()  # as release takes none
    assert bodiless["kind"] == "Reservation" and bodiless["expiresAt"] >= default["expiresAt"]
    default = bodiless
    read = (await client.get(f"/v1/reservations/{made['id']}")).json()
    assert read["state"] == "active" and read["expiresAt"] == default["expiresAt"] and read["gpus"] == made["gpus"]
    # What GraphQL's Reservation shows a scheduler, the preemption warning fields included.
    assert read["createdAt"] == made["createdAt"] and read["priority"] == 0 and read["labels"] == []
    assert {"preemptBy", "preemptAt", "graceEndsAt"} <= set(read) and read["preemptBy"] is None
    bad = (await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttlSeconds": 0})).json()
    assert bad["kind"] == "ValidationError" and bad["field"] == "ttlSeconds"
    unknown = await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttl": 5})
    assert unknown.status_code == 422 and "ttl" in unknown.text  # a field it does not know is refused, not dropped
    assert (await client.post("/v1/reservations/rsv-nope/renew", json={})).json()["kind"] == "NotFound"
    missing = (await client.get("/v1/reservations/rsv-nope")).json()
    assert missing == {**missing, "kind": "NotFound", "id": "rsv-nope"}
    released = (await client.post(f"/v1/reservations/{made['id']}/release")).json()
    assert released["state"] == "released" and released["endedAt"] is not None
    after = (await client.post(f"/v1/reservations/{made['id']}/renew", json={})).json()
    assert after["kind"] == "LeaseExpired" and "released" in after["message"]


@pytest.mark.parametrize("group_commit", [True, False], ids=["batch", "alone"])
async def test_a_late_release_ends_it_as_it_read_expired(gateway: Gateway, group_commit: bool) -> None:
    """A release after the lease ran out (and before the reaper) turned `expired` into `released`
    with a later end; a retried reserve with its key still answered `active`."""
    host = (await load(gateway, "l40s:hosts=1")).hosts[0]
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, group_commit=group_commit)
    kinds: list[str] = []
    publish = svc.events.publish

    async def record(event: Event) -> None:
        kinds.append(event.kind)
        await publish(event)

    svc.events.publish = record  # type: ignore[method-assign]
    made = await svc.reserve(holder="j", request=parse_request("2xL40S"), ttl_s=10, idempotency_key="k1")
    taken_over = await svc.reserve(holder="j", request=parse_request("1xL40S"), ttl_s=10)
    assert isinstance(made, Reservation) and isinstance(taken_over, Reservation)
    clock.now += 11
    retried = await svc.reserve(holder="j", request=parse_request("2xL40S"), ttl_s=10, idempotency_key="k1")
    assert isinstance(retried, Reservation) and retried.id == made.id
    assert retried.state == "expired" and not any(g.held for g in retried.gpus)
    # Its GPU taken by another reserve after the lapse: the late release ends it holding nothing.
    other = await svc.reserve(holder="next", gpus=[g.uuid for g in taken_over.gpus], ttl_s=60)
    assert isinstance(other, Reservation)
    for late in (made, taken_over):
        ended = await svc.release(late.id)
        assert isinstance(ended, Reservation)
        assert (ended.state, ended.ended_at) == ("expired", late.expires_at), ended
        assert await svc.read(late.id) == ended
    assert kinds.count("reservation.expired") == 2 and "reservation.released" not in kinds
    assert await free_of(gateway, host.hostname) == len(host.gpus) - 1  # only the new holder's GPU is held
    await invariants(gateway, clock.now)


async def lapsed(gateway: Gateway, request: str, ttl_s: int) -> tuple[Clock, ReservationService, Reservation]:
    """On one L40S host, a reservation whose lease ran out a second ago (the reaper not run yet)."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await svc.reserve(holder="j", request=parse_request(request), ttl_s=ttl_s)
    assert isinstance(made, Reservation)
    clock.now += ttl_s + 1
    return clock, svc, made


async def test_the_reaper_ends_a_lease_when_it_ran_out(gateway: Gateway) -> None:
    """`endedAt` read before the reaper (the lease's end) and after it are the same."""
    clock, svc, made = await lapsed(gateway, "2xL40S", ttl_s=10)
    before = await svc.read(made.id)
    clock.now += 30  # the reaper runs late
    assert await svc.expire_due() == [made.id]
    after = await svc.read(made.id)
    assert before is not None and after is not None
    assert (before.state, before.ended_at) == (after.state, after.ended_at) == ("expired", made.expires_at)


async def test_a_renew_says_why_when_a_gpu_is_gone(gateway: Gateway) -> None:
    """A live lease whose GPU its host stopped reporting cannot be renewed; it was told the lease
    ran out, with an end in the future."""
    cluster = await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await svc.reserve(holder="j", request=parse_request("2xL40S"), ttl_s=60)
    assert isinstance(made, Reservation)
    facts = cluster.hosts[0]
    gone = made.gpus[0].uuid
    doc = facts.model_dump()
    doc["gpus"] = [g for g in doc["gpus"] if g["uuid"] != gone]
    doc["gpu_nic_affinity"] = [a for a in doc["gpu_nic_affinity"] if a["gpu_uuid"] != gone]
    doc["collected_at"] = facts.collected_at + timedelta(seconds=1)
    fewer = HostFacts.model_validate(doc)
    assert (await ingest_host(gateway, fewer)).applied
    out = await svc.renew(made.id, 60)
    assert isinstance(out, LeaseExpired) and "no longer holds every GPU" in out.message and out.expired_at == clock.now
    # It ends as the answer says, its other GPU freed: it stayed live holding it (a probe's case).
    ended = await svc.read(made.id)
    assert ended is not None and (ended.state, ended.ended_at) == ("expired", clock.now)
    assert await free_of(gateway, facts.hostname) == len(facts.gpus) - 1
    await invariants(gateway, clock.now)


@pytest.mark.parametrize("group_commit", [True, False], ids=["batch", "alone"])
async def test_each_lapsed_lease_ends_once_when_releases_takeovers_and_the_reaper_race(
    gateway: Gateway, group_commit: bool
) -> None:
    """On Neo4j, a takeover that took a lapsed lease's GPUs between the reaper's first read and
    its locks left the reaper ending the reservation without returning its id (its recount tail
    unwound no host): the reservation ended with no end event, and a preemption waiting on it
    heard nothing until its deadline (5 of 8 runs of a helper's trial)."""
    cluster = await load(gateway, "l40s:hosts=5")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, group_commit=group_commit)
    ends = ended_reservations(svc)
    made: list[Reservation] = []
    for host in cluster.hosts:
        uuids = [g.uuid for g in host.gpus]
        for pair in (uuids[0:2], uuids[2:4]):
            held = await svc.reserve(holder="a", gpus=pair, ttl_s=60)
            assert isinstance(held, Reservation)
            made.append(held)
    clock.now += 100  # every lease lapsed: takeovers, late releases and the reaper at once
    takeovers = [svc.reserve(holder="b", gpus=[g.uuid for g in r.gpus], ttl_s=600) for r in made]
    releases = [svc.release(r.id) for r in made]
    await asyncio.gather(*[call for pair in zip(takeovers, releases, strict=True) for call in pair], svc.expire_due())
    await svc.expire_due()
    assert sorted(ends) == sorted(r.id for r in made)  # each exactly once
    for r in made:
        ended = await svc.read(r.id)
        assert ended is not None and (ended.state, ended.ended_at) == ("expired", r.expires_at)
    await invariants(gateway, clock.now)


async def test_the_owner_check_reads_only_what_this_process_has_not_seen(gateway: Gateway) -> None:
    """A scheduler's release or renew checks the owner; of a reservation this process made (or
    read) it is kept, so the check costs no read. Another replica reads it once."""
    await load(gateway, "l40s:hosts=2")
    here, replica = ReservationService(gateway), ReservationService(gateway)
    made = await here.reserve(holder="job", owner="sched-1", request=parse_request("1"), ttl_s=60)
    assert isinstance(made, Reservation)
    reads: list[str] = []
    real = gateway.read

    async def counted(name: str, params: dict[str, Any] | None = None) -> Any:
        reads.append(name)
        return await real(name, params)

    gateway.read = counted  # type: ignore[method-assign,assignment]
    try:
        assert await here.may_change(made.id, "sched-1", operator=False)
        assert not await here.may_change(made.id, "sched-2", operator=False)
        assert reads == []
        assert not await replica.may_change(made.id, "sched-2", operator=False)
        assert await replica.may_change(made.id, "sched-1", operator=False)
        assert reads == ["reservations/reservation_get"]  # once, then kept
        assert await replica.may_change("rsv-nobody-made", "sched-2", operator=False)  # the call answers NotFound
    finally:
        gateway.read = real  # type: ignore[method-assign]
