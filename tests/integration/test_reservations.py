"""Reservations on the real embedded store: typed outcomes, leases with an injected clock, counters."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import (
    Conflict,
    Infeasible,
    LeaseExpired,
    NotFound,
    Reservation,
    ReservationService,
    ValidationError,
)
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load
from tests.queries import with_test_queries


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def free_of(gw: Gateway, host: str) -> int:
    rows = await gw.read("hosts_page", {"after": "", "cluster": "", "rack": "", "scalable_unit": "", "model": "",
                                        "min_free": 0, "stale_before": 0.0, "first": 500})  # fmt: skip
    return next(int(r["free_gpus"]) for r in rows if r["name"] == host)


async def invariants(gw: Gateway, now: float) -> None:
    assert await with_test_queries(gw).read("reservations/double_holds", {"now": now}) == []
    assert await with_test_queries(gw).read("reservations/incomplete_reservations", {"now": now}) == []


RESERVE = """mutation { reserve(input: {request: {gpus: 8, model: "H100", nvlink: FULL_MESH},
holder: "job-1", ttlSeconds: 600, idempotencyKey: "k1"}) { __typename
... on Reservation { id gpus { uuid } expiresAt } ... on Conflict { gpus { uuid } }
... on Infeasible { reasons { constraint message } } } }"""


async def test_issue_mutations_work_as_written(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    first = (await gql(client, RESERVE))["reserve"]
    assert first["__typename"] == "Reservation" and len(first["gpus"]) == 8
    again = (await gql(client, RESERVE))["reserve"]
    assert again["id"] == first["id"]  # same idempotency key, same reservation
    listed = (await gql(client, "{ reservations { id holder gpus { uuid } } }"))["reservations"]
    assert [(r["id"], r["holder"], len(r["gpus"])) for r in listed] == [(first["id"], "job-1", 8)]
    released = (await gql(client, f'mutation {{ release(id: "{first["id"]}") {{ __typename }} }}'))["release"]
    assert released["__typename"] == "Reservation"
    twice = await gql(
        client, f'mutation {{ release(id: "{first["id"]}") {{ __typename ... on Reservation {{ state }} }} }}'
    )
    assert twice["release"] == {"__typename": "Reservation", "state": "released"}
    missing = (await gql(client, 'mutation { release(id: "nope") { __typename } }'))["release"]
    assert missing["__typename"] == "NotFound"


async def test_counters_move_with_the_reservation(gateway: Gateway) -> None:
    cluster = await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    host = cluster.hosts[0]
    before = await free_of(gateway, host.hostname)
    out = await svc.reserve(holder="h", gpus=[g.uuid for g in host.gpus[:3]])
    assert isinstance(out, Reservation) and {g.host for g in out.gpus} == {host.hostname}
    assert await free_of(gateway, host.hostname) == before - 3
    domains = {r["uuid"]: r for r in await gateway.read("nvlink_domains")}
    leaf = (await gateway.read("fabric_switches", {"cluster": "default", "tier": "leaf", "after": "", "first": 1}))[0]
    # 248 GPUs behind the first leaf (a rail of the one scalable unit: every host), minus the
    # failed ones (#17: a failed GPU is never free).
    failed = sum(1 for h in cluster.hosts for g in h.gpus if g.health == "failed")
    assert leaf["free_gpus"] == 248 - failed - 3
    assert domains
    await svc.release(out.id)
    assert await free_of(gateway, host.hostname) == before


async def test_conflict_names_the_holder(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    uuids = [g.uuid for g in cluster.hosts[0].gpus]
    first = await svc.reserve(holder="a", gpus=uuids[:2])
    assert isinstance(first, Reservation)
    clash = await svc.reserve(holder="b", gpus=uuids[1:3])
    assert isinstance(clash, Conflict)
    assert [(h.gpu_uuid, h.reservation, h.holder) for h in clash.holders] == [(uuids[1], first.id, "a")]
    assert isinstance(await svc.reserve(holder="b", gpus=["GPU-nope"]), ValidationError)
    assert isinstance(await svc.reserve(holder="b", request=parse_request("8xL40S")), Infeasible)
    assert isinstance(await svc.reserve(holder="", gpus=uuids[:1]), ValidationError)
    assert isinstance(await svc.reserve(holder="b", gpus=uuids[:1], ttl_s=10**9), ValidationError)
    assert isinstance(await svc.reserve(holder="b"), ValidationError)


async def test_an_infeasible_reserve_says_why_without_the_diagnosis(gateway: Gateway) -> None:
    """Without explain: an unknown model names the models there are; a known one that does not
    fit says so in one line, the models taken from the engine's kept list, not read again."""
    await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    unknown = await svc.reserve(holder="b", request=parse_request("8xB200"))
    assert isinstance(unknown, Infeasible) and [r.constraint for r in unknown.reasons] == ["model"]
    assert "L40S" in unknown.reasons[0].message
    gateway.stats.clear()
    too_big = await svc.reserve(holder="b", request=parse_request("16xL40S"))
    assert isinstance(too_big, Infeasible) and [r.constraint for r in too_big.reasons] == ["placement"]
    assert "placement_gpu_models" not in gateway.stats


async def test_idempotency_key_belongs_to_its_holder(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    uuids = [g.uuid for g in cluster.hosts[0].gpus]
    a = await svc.reserve(holder="a", gpus=uuids[:1], idempotency_key="key-1")
    b = await svc.reserve(holder="a", gpus=uuids[:1], idempotency_key="key-1")
    assert isinstance(a, Reservation) and isinstance(b, Reservation) and a.id == b.id
    other = await svc.reserve(holder="z", gpus=uuids[2:3], idempotency_key="key-1")
    assert isinstance(other, ValidationError) and other.field == "idempotencyKey"
    for odd in ("job\x7f", "job\u202e1-boj", "two\u2028lines", "tab\there"):  # DEL, a direction override, breaks
        refused = await svc.reserve(holder=odd, gpus=uuids[2:3])
        assert isinstance(refused, ValidationError) and refused.field == "holder", (odd, refused)
        labelled = await svc.reserve(holder="h", gpus=uuids[2:3], labels=[odd])
        assert isinstance(labelled, ValidationError) and labelled.field == "labels", (odd, labelled)
    for blank in (" ", "   ", "\u3000"):  # only spaces names nothing (a probe of stop 58 was given one)
        refused = await svc.reserve(holder=blank, gpus=uuids[2:3])
        assert isinstance(refused, ValidationError) and refused.field == "holder", (blank, refused)
        keyed = await svc.reserve(holder="h", gpus=uuids[2:3], idempotency_key=blank)
        assert isinstance(keyed, ValidationError) and keyed.field == "idempotencyKey", (blank, keyed)
    twice = await svc.reserve(holder="h", gpus=uuids[2:3], labels=["team-a", "team-a"])
    assert isinstance(twice, ValidationError) and twice.field == "labels" and "at most once" in twice.message
    for fine in ("山田\u3000太郎", "👩\u200d💻 team", "a\u00a0b"):  # ideographic space, a ZWJ emoji, NBSP
        made = await svc.reserve(holder=fine, gpus=uuids[2:3], labels=[fine])
        assert isinstance(made, Reservation), (fine, made)
        await svc.release(made.id)
    # A reservation made without a key keeps its id as its key: that id is not a key to replay.
    keyless = await svc.reserve(holder="a", gpus=uuids[3:4])
    assert isinstance(keyless, Reservation)
    reused = await svc.reserve(holder="a", request=parse_request("2xL40S"), idempotency_key=keyless.id)
    assert isinstance(reused, ValidationError) and reused.field == "idempotencyKey", reused
    assert "reservation's id" in reused.message


async def test_leases_expire_renew_and_free_gpus(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    host = cluster.hosts[0].hostname
    r = await svc.reserve(holder="job", request=parse_request("4xL40S"), ttl_s=10)
    assert isinstance(r, Reservation) and r.expires_at == clock.now + 10
    clock.now += 8
    renewed = await svc.renew(r.id, 10)
    assert isinstance(renewed, Reservation) and renewed.expires_at == clock.now + 10
    clock.now += 9
    assert await svc.expire_due() == []  # renewed in time
    assert await free_of(gateway, host) == 0
    clock.now += 2
    late = await svc.renew(r.id, 10)
    assert isinstance(late, LeaseExpired)
    assert await svc.expire_due() == [r.id]
    assert await free_of(gateway, host) == 4
    ended = await svc.get(r.id)
    assert ended is not None and ended.state == "expired"
    assert isinstance(await svc.renew(r.id, 10), LeaseExpired)
    assert isinstance(await svc.renew("nope", 10), NotFound)
    await invariants(gateway, clock.now)


async def test_a_renew_without_a_ttl_keeps_the_lease_last_granted(gateway: Gateway) -> None:
    """Before stop 51 it renewed for the service's default (600 s): an hour's lease fell to ten minutes."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, default_ttl_s=600)
    made = await svc.reserve(holder="job", request=parse_request("2xL40S"), ttl_s=3600)
    assert isinstance(made, Reservation)
    clock.now += 100
    kept = await svc.renew(made.id)
    assert isinstance(kept, Reservation) and kept.expires_at == clock.now + 3600  # what reserve granted
    clock.now += 100
    shorter = await svc.renew(made.id, 60)
    assert isinstance(shorter, Reservation) and shorter.expires_at == clock.now + 60
    clock.now += 30
    again = await svc.renew(made.id)
    assert isinstance(again, Reservation) and again.expires_at == clock.now + 60  # what the last renew granted
    read = await svc.get(made.id)
    assert read is not None and read.expires_at == clock.now + 60
    default = await svc.reserve(holder="job", request=parse_request("1xL40S"))
    assert isinstance(default, Reservation)
    clock.now += 10
    renewed = await svc.renew(default.id)
    assert isinstance(renewed, Reservation) and renewed.expires_at == clock.now + 600
    assert isinstance(await svc.renew(made.id, 0), ValidationError)
    long = await svc.reserve(holder="job", request=parse_request("1xL40S"), ttl_s=3600)
    assert isinstance(long, Reservation)
    lowered = ReservationService(gateway, clock=clock, default_ttl_s=600, max_ttl_s=1000)
    bounded = await lowered.renew(long.id)
    assert isinstance(bounded, Reservation) and bounded.expires_at == clock.now + 1000  # the bound, not the default
    await invariants(gateway, clock.now)


async def test_lapsed_holds_count_as_free_before_the_reaper_runs(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    uuids = sorted(g.uuid for g in cluster.hosts[0].gpus)
    old = await svc.reserve(holder="late-job", gpus=uuids, ttl_s=5)
    assert isinstance(old, Reservation)
    assert isinstance(await svc.reserve(holder="next", gpus=uuids), Conflict)
    clock.now += 6  # the lease lapsed, the reaper has not run: the write itself takes the GPUs over
    new = await svc.reserve(holder="next", gpus=uuids, ttl_s=60)
    assert isinstance(new, Reservation)
    await invariants(gateway, clock.now)
    assert await svc.expire_due() == [old.id]  # ends the lapsed one without touching the new holds
    assert await free_of(gateway, cluster.hosts[0].hostname) == 0
    current = await svc.get(new.id)
    assert current is not None and all(g.held for g in current.gpus)
    # A placement-based reserve reaps lapsed leases first, so the counters see the GPUs again.
    clock.now += 61
    again = await svc.reserve(holder="third", request=parse_request("4xL40S"), ttl_s=60)
    assert isinstance(again, Reservation)
    await invariants(gateway, clock.now)


async def test_placement_offers_a_lapsed_leases_gpus_before_the_reaper_runs(gateway: Gateway) -> None:
    """Place and reserve agree: a reserve took a lapsed lease's GPUs while placement, reading free
    counters, said nothing fits until the reaper's next run (up to 5 s)."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    held = await svc.reserve(holder="late-job", request=parse_request("4xL40S"), ttl_s=5)
    assert isinstance(held, Reservation)
    assert not (await svc.engine.place(parse_request("4xL40S"))).candidates
    clock.now += 6  # lapsed; no reaper has run
    found = await svc.engine.place(parse_request("4xL40S"))
    assert len(found.candidates) == 1 and not found.infeasible
    ended = await svc.get(held.id)
    assert ended is not None and ended.state == "expired"
    await invariants(gateway, clock.now)


async def test_events_are_published(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    seen: list[str] = []

    async def listen() -> None:
        async for event in svc.events.subscribe():
            seen.append(event.kind)
            if event.kind == "reservation.released":
                return

    import asyncio

    task = asyncio.create_task(listen())
    await asyncio.sleep(0)
    r = await svc.reserve(holder="a", gpus=[cluster.hosts[0].gpus[0].uuid])
    assert isinstance(r, Reservation)
    await svc.renew(r.id, 60)
    await svc.release(r.id)
    await asyncio.wait_for(task, 5)
    assert seen == ["reservation.created", "reservation.renewed", "reservation.released"]


@pytest.mark.parametrize("ttl", [0, -5])
async def test_bad_ttl_is_a_validation_error(gateway: Gateway, ttl: int) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    out = await svc.reserve(holder="a", gpus=[cluster.hosts[0].gpus[0].uuid], ttl_s=ttl)
    assert isinstance(out, ValidationError) and out.field == "ttlSeconds"


async def test_preemption_only_when_asked_and_only_lower_priority(gateway: Gateway) -> None:
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    uuids = sorted(g.uuid for g in cluster.hosts[0].gpus)
    low = await svc.reserve(holder="batch", gpus=uuids[:2], priority=1, preemptible=True)
    keep = await svc.reserve(holder="prod", gpus=uuids[2:3], priority=5, preemptible=False)
    assert isinstance(low, Reservation) and isinstance(keep, Reservation)
    req = parse_request("3xL40S")
    assert isinstance(await svc.reserve(holder="urgent", request=req, priority=9), Infeasible)  # not asked
    plan = await svc.preemption_plan(req, priority=9)
    assert plan.feasible and [v.reservation for v in plan.victims] == [low.id]
    assert set(plan.gpus) == {uuids[0], uuids[1], uuids[3]}
    still = await svc.get(low.id)
    assert still is not None and still.state == "active"  # a plan changes nothing
    assert not (await svc.preemption_plan(req, priority=1)).feasible  # equal priority cannot preempt
    won = await svc.reserve(holder="urgent", request=req, priority=9, allow_preemption=True)
    assert isinstance(won, Reservation) and sorted(g.uuid for g in won.gpus) == plan.gpus
    ended = await svc.get(low.id)
    assert ended is not None and ended.state == "preempted"
    # The victim's history: the GPUs it held, none held now (their edges went to the winner).
    assert sorted(g.uuid for g in ended.gpus) == uuids[:2] and not any(g.held for g in ended.gpus)
    kept = await svc.get(keep.id)
    assert kept is not None and kept.state == "active"
    await invariants(gateway, svc.clock())
    assert await free_of(gateway, cluster.hosts[0].hostname) == 0


async def test_a_preemption_plan_breaks_ties_in_gpu_order_not_by_string_hash(gateway: Gateway) -> None:
    """Candidates alike in every soft key (collectors reporting the same temperature and no load)
    tie in ranking, and the first found wins. The victims' hosts' NVLink domains are tried in GPU
    order: they were tried in a set's order, which Python salts per process, so a restart or a
    second replica planned another GPU pair (the A100 PCIe host's four bridged pairs)."""
    cluster = build("a100-pcie:hosts=1")
    host = cluster.hosts[0]
    alike = {"temperature_c": 40.0, "utilization_pct": 0.0, "memory_used_mib": 0, "power_w": 100.0}
    cluster.hosts[0] = host.model_copy(update={"gpus": [g.model_copy(update=alike) for g in host.gpus]})
    await load(gateway, cluster)
    svc = ReservationService(gateway)
    every = [g.uuid for g in host.gpus]
    assert isinstance(await svc.reserve(holder="batch", gpus=every, priority=1, preemptible=True), Reservation)
    plan = await svc.preemption_plan(parse_request("2 nvlink=any"), priority=9)
    assert plan.feasible
    first = min(host.gpus, key=lambda g: g.index)
    assert first.uuid in plan.gpus  # the pair of the first GPU's domain


async def test_subscription_streams_events(client: httpx.AsyncClient, gateway: Gateway, app: Any) -> None:
    import asyncio

    from graphsvc.api.graphql.context import Context
    from graphsvc.api.graphql.schema import schema

    cluster = await load(gateway, "l40s:hosts=1")
    svc: ReservationService = app.state.reservations
    ctx = Context(services=app.state.services)
    stream = await schema.subscribe('subscription { events(holder: "sub") { kind subject holder } }', context_value=ctx)
    got: list[dict[str, Any]] = []

    async def read() -> None:
        async for result in stream:
            assert result.errors is None and result.data is not None
            got.append(result.data["events"])
            if len(got) == 2:
                return

    task = asyncio.create_task(read())
    await asyncio.sleep(0.05)
    r = await svc.reserve(holder="sub", gpus=[cluster.hosts[0].gpus[0].uuid])
    await svc.reserve(holder="other", gpus=[cluster.hosts[0].gpus[1].uuid])  # filtered out
    assert isinstance(r, Reservation)
    await svc.release(r.id)
    await asyncio.wait_for(task, 5)
    assert [(e["kind"], e["holder"]) for e in got] == [("reservation.created", "sub"), ("reservation.released", "sub")]


async def test_lease_job_reports_hosts_going_stale_and_back(gateway: Gateway) -> None:
    import asyncio

    from graphsvc.reservations.leases import LeaseKeeper

    cluster = await load(gateway, "l40s:hosts=2")
    clock = Clock(now=10**10)
    svc = ReservationService(gateway, clock=clock)
    keeper = LeaseKeeper(svc, stale_after_s=300, clock=clock)
    seen: list[tuple[str, str]] = []

    async def listen() -> None:
        async for e in svc.events.subscribe():
            seen.append((e.kind, e.subject))
            if len(seen) == 2:
                return

    task = asyncio.create_task(listen())
    await asyncio.sleep(0)
    keeper.stale = set()  # as if the last tick saw every host fresh
    await keeper.tick()  # the clock is far ahead: both hosts went stale
    await asyncio.wait_for(task, 5)
    assert sorted(seen) == sorted(("host.stale", h.hostname) for h in cluster.hosts)
    clock.now = 0.0
    recovered: list[str] = []

    async def listen_again() -> None:
        async for e in svc.events.subscribe():
            recovered.append(e.kind)
            if len(recovered) == 2:
                return

    task = asyncio.create_task(listen_again())
    await asyncio.sleep(0)
    await keeper.tick()
    await asyncio.wait_for(task, 5)
    assert recovered == ["host.recovered", "host.recovered"]


async def test_a_reserve_by_uuids_is_one_statement_and_answers_as_the_reservation_read_back(gateway: Gateway) -> None:
    """A scheduler places, then reserves the GPUs it chose. That reserve checked the uuids, wrote,
    and read the reservation back: three round trips. The write now answers the reservation as
    stored, and why it took nothing is read only when it took nothing (unknown, held, or a MIG
    GPU: the same typed answers as before)."""
    c = build("a100-pcie:hosts=1")
    await load(gateway, c)
    svc = ReservationService(gateway, group_commit=False)
    uuids = [g.uuid for g in c.hosts[0].gpus]
    gateway.stats.clear()
    made = await svc.reserve(holder="job", gpus=uuids[:2], ttl_s=60, labels=["a"], idempotency_key="k-one")
    assert isinstance(made, Reservation), made
    assert set(gateway.stats) == {"reservations/reservation_get", "reservations/reserve_gpus"}  # the key's lookup
    assert gateway.stats["reservations/reserve_gpus"].calls == 1 and made == await svc.get(made.id)
    gateway.stats.clear()
    plain = await svc.reserve(holder="job", gpus=[uuids[3], uuids[2]], ttl_s=60)
    assert isinstance(plain, Reservation) and list(gateway.stats) == ["reservations/reserve_gpus"]
    assert [g.uuid for g in plain.gpus] == sorted(uuids[2:4], key=lambda u: uuids.index(u))
    assert plain == await svc.get(plain.id)
    held = await svc.reserve(holder="other", gpus=[uuids[1], uuids[4]], ttl_s=60)
    assert isinstance(held, Conflict) and [h.gpu_uuid for h in held.holders] == [uuids[1]]
    unknown = await svc.reserve(holder="other", gpus=["GPU-not-here", uuids[5]], ttl_s=60)
    assert isinstance(unknown, ValidationError) and unknown.message == "unknown GPU uuid(s): GPU-not-here"
    assert await free_of(gateway, c.hosts[0].hostname) == len(uuids) - 4
    await invariants(gateway, svc.clock())


async def test_an_ended_reservation_keeps_its_gpus_after_they_are_reserved_again(gateway: Gateway) -> None:
    """The GPUs it holds or held: an ended reservation's list went empty once another reservation
    took its GPUs (their HOLDS edges went with the take), and a retry with its idempotency key
    answered a reservation of no GPU (a probe's case). GPUs given by uuid and by request; a
    preemption's victim keeps its list too (test_preemption_only_when_asked_and_only_lower_priority)."""
    cluster = await load(gateway, "l40s:hosts=1")
    svc = ReservationService(gateway)
    uuids = sorted(g.uuid for g in cluster.hosts[0].gpus)
    first = await svc.reserve(holder="a", gpus=uuids[:2], idempotency_key="hy-1")
    by_request = await svc.reserve(holder="a", request=parse_request("2xL40S"))
    assert isinstance(first, Reservation) and isinstance(by_request, Reservation)
    given = {first.id: uuids[:2], by_request.id: sorted(g.uuid for g in by_request.gpus)}
    for rid in given:
        await svc.release(rid)
    again = await svc.reserve(holder="b", gpus=uuids)  # every GPU of the host, both histories' too
    assert isinstance(again, Reservation)
    for rid, held in given.items():
        ended = await svc.get(rid)
        assert ended is not None and ended.state == "released"
        assert sorted(g.uuid for g in ended.gpus) == held and not any(g.held for g in ended.gpus), rid
    retried = await svc.reserve(holder="a", gpus=uuids[:2], idempotency_key="hy-1")
    assert isinstance(retried, Reservation) and retried.id == first.id
    assert sorted(g.uuid for g in retried.gpus) == uuids[:2]
    live = await svc.get(again.id)
    assert live is not None and sorted(g.uuid for g in live.gpus) == uuids and all(g.held for g in live.gpus)
    await invariants(gateway, svc.clock())
