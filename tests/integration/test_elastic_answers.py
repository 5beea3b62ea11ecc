"""What elastic jobs are answered and told when the reservation or its GPUs change meanwhile,
on both stores: a replacement's news told once per kind, a resize of a reservation released
while it plans, a resize of one whose host stopped reporting a GPU, and a spare that fails
between the plan and the write. Races are made repeatable by hooking the gateway's named
read or write once (the change lands just before the statement runs), never by timing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from datetime import timedelta
from typing import Any

from topo_facts.models import HostFacts

from graphsvc.ingest.service import ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.elastic import Elastic, elastic_for
from graphsvc.reservations.events import Event
from graphsvc.reservations.resize import Live, Resized
from graphsvc.reservations.service import LeaseExpired, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import fail_gpu, load
from tests.integration.test_elastic_resize import consistent
from tests.integration.test_reservations import Clock
from tests.stores import adhoc


async def _run(gw: Gateway, text: str, params: dict[str, object]) -> list[dict[str, Any]]:
    return await gw.backend.run(adhoc("answers", text), params, write=True, timeout_s=60)


async def _report(
    gw: Gateway, facts: HostFacts, *, drop: Collection[str] = (), health: dict[str, str] | None = None, later_s: float
) -> None:
    """The host reports again, `later_s` after its facts: without the GPUs in `drop`, with the
    health given (ingest moves the free counters as a real report does)."""
    doc = facts.model_dump()
    doc["gpus"] = [g for g in doc["gpus"] if g["uuid"] not in drop]
    for g in doc["gpus"]:
        g["nvlinks"] = [link for link in g.get("nvlinks", []) if link["peer_id"] not in drop]
        g["health"] = (health or {}).get(g["uuid"], g.get("health"))
    doc["gpu_nic_affinity"] = [a for a in doc["gpu_nic_affinity"] if a["gpu_uuid"] not in drop]
    doc["collected_at"] = facts.collected_at + timedelta(seconds=later_s)
    assert (await ingest_host(gw, HostFacts.model_validate(doc))).applied


def _host_of(cluster: SyntheticCluster, uuid: str) -> HostFacts:
    return next(h for h in cluster.hosts if any(g.uuid == uuid for g in h.gpus))


async def _job(gw: Gateway) -> tuple[SyntheticCluster, Clock, ReservationService, Elastic, Reservation]:
    """One scalable unit of DGX H100, every host fresh, and a 16-GPU rail-aligned job on it."""
    cluster = await load(gw, "superpod-h100:sus=1")
    clock = Clock()
    await _run(gw, "MATCH (h:Host) SET h.received_at = $now", {"now": clock.now})
    svc = ReservationService(gw, clock=clock)
    job = await svc.reserve(holder="trainer", request=parse_request("16xH100 per-host=8 rail-aligned"), ttl_s=86400)
    assert isinstance(job, Reservation), job
    return cluster, clock, svc, elastic_for(svc), job


def _once(name: str, before: Callable[[dict[str, Any]], Awaitable[None]], call: Any) -> Any:
    """`call` (the gateway's read or write), running `before(params)` the first time the named
    statement is asked for, just before it runs."""
    fired: list[int] = []

    async def hooked(query: str, params: dict[str, Any] | None = None, *a: Any, **k: Any) -> Any:
        if query == name and not fired:
            fired.append(1)
            await before(params or {})
        return await call(query, params, *a, **k)

    return hooked


async def test_a_replacement_is_proposed_once_when_spares_appear_after_none_were(gateway: Gateway) -> None:
    """`replacement_unavailable` and `replacement_proposed` were both remembered under the
    reservation and its failed GPUs, so once told "unavailable" the holder never heard of the
    spares that appeared later; and what was told was kept for the life of the process."""
    cluster, _clock, svc, el, job = await _job(gateway)
    mine = {g.uuid for g in job.gpus}
    rest = [g.uuid for h in cluster.hosts for g in h.gpus if g.uuid not in mine and g.health.value != "failed"]
    filler = await svc.reserve(holder="filler", gpus=rest, ttl_s=86400)
    assert isinstance(filler, Reservation), filler
    told: list[str] = []

    async def record(e: Event) -> None:
        if e.subject == job.id:
            told.append(e.kind)

    svc.events.observers.append(record)
    await fail_gpu(gateway, sorted(mine)[0])
    await el.replacement.check()
    await el.replacement.check()
    assert told == ["reservation.replacement_unavailable"]  # once, however often the job looks
    await svc.release(filler.id)
    found = await el.replacement.check()
    await el.replacement.check()
    assert next(r.ranks for r in found if r.reservation == job.id)
    assert told == ["reservation.replacement_unavailable", "reservation.replacement_proposed"]
    await svc.release(job.id)
    await el.replacement.check()
    assert not el.replacement.told  # an ended reservation is forgotten


async def test_a_resize_of_a_reservation_released_while_it_plans_says_the_lease_ended(gateway: Gateway) -> None:
    """The release lands between the liveness read and the neighbourhood read (which reads
    through the GPUs the reservation still owns): the pool came back empty and the resize
    answered Infeasible with the hint `keepLayout: false`, inviting a retry of a dead job."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    el = elastic_for(svc)
    r = await svc.reserve(holder="j", gpus=[g.uuid for g in cluster.hosts[0].gpus[:4]], ttl_s=600)
    assert isinstance(r, Reservation), r

    async def release(_: dict[str, Any]) -> None:
        await svc.release(r.id)

    gateway.read = _once("reservations/resize_neighbourhood", release, gateway.read)  # type: ignore[method-assign]
    try:
        out = await el.resize.resize(r.id, gpus=8)
    finally:
        del gateway.read  # the instance attribute goes, the class's method is back
    assert isinstance(out, LeaseExpired), out
    assert "released" in out.message
    again = await el.resize.resize(r.id, gpus=8)
    assert isinstance(again, LeaseExpired), again
    await consistent(gateway, clock.now)


async def test_a_resize_after_the_host_stopped_reporting_a_gpu_ends_the_lease_as_renew_does(
    gateway: Gateway,
) -> None:
    """Every resize was refused (the write needs every GPU it was granted) and answered a
    retryable Conflict for ever, while renew answers LeaseExpired and ends it."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    el = elastic_for(svc)
    h0 = cluster.hosts[0]
    r = await svc.reserve(holder="j", gpus=[g.uuid for g in h0.gpus], ttl_s=86400)
    assert isinstance(r, Reservation), r
    await _report(gateway, h0, drop={h0.gpus[7].uuid}, later_s=1)
    out = await el.resize.resize(r.id, gpus=4)
    assert isinstance(out, LeaseExpired), out
    assert "no longer holds every GPU" in out.message and out.expired_at == clock.now
    ended = await svc.read(r.id)
    assert ended is not None and (ended.state, ended.ended_at) == ("expired", clock.now)
    rows = await gateway.read("reservations/free_counts", {"hosts": [h0.hostname]})
    assert int(rows[0]["host_free"]) == 7  # its other GPUs are free again
    again = await el.resize.resize(r.id, gpus=4)
    assert isinstance(again, LeaseExpired), again
    await consistent(gateway, clock.now)


async def test_a_replacement_never_takes_a_spare_that_failed_before_the_write(gateway: Gateway) -> None:
    """The spare's host reports it failed after the plan chose it: the write checked the spare's
    state and lease, never its health, and the job's rank 3 became the GPU that had just failed."""
    cluster, clock, _svc, el, job = await _job(gateway)
    live = await el.resize.live(job.id)
    assert isinstance(live, Live)
    victim = live.slots[3]
    await fail_gpu(gateway, victim.uuid)
    chosen = (await el.replacement.check(apply=False))[0].ranks[3]

    async def fail(_: dict[str, Any]) -> None:
        await _report(gateway, _host_of(cluster, chosen), health={chosen: "failed"}, later_s=5)

    gateway.write = _once("reservations/resize_reservation", fail, gateway.write)  # type: ignore[method-assign]
    try:
        done = await el.replacement.replace(job.id, [victim.uuid], apply=True)
    finally:
        del gateway.write
    assert done is not None and done.applied, done
    assert done.ranks[3] != chosen  # planned again, on another spare
    after = await el.resize.live(job.id)
    assert isinstance(after, Live) and after.slots[3].uuid == done.ranks[3]
    assert after.slots[3].rail == victim.rail
    rows = await _run(
        gateway,
        "MATCH (r:Reservation {id: $id})-[:HOLDS]->(g:GPU) WHERE g.reservation = r.id "
        "AND toLower(coalesce(g.health, 'ok')) IN ['failed', 'degraded'] RETURN g.uuid AS u",
        {"id": job.id},
    )
    assert rows == []
    await consistent(gateway, clock.now)  # counters equal a recount


async def test_a_grow_never_takes_a_gpu_that_failed_before_the_write(gateway: Gateway) -> None:
    """The same for a grow: the GPU that failed after the plan is refused and the grow plans again."""
    cluster, clock, _svc, el, job = await _job(gateway)
    failed: list[str] = []

    async def fail(params: dict[str, Any]) -> None:
        failed.append(sorted(params["add"])[0])
        await _report(gateway, _host_of(cluster, failed[0]), health={failed[0]: "failed"}, later_s=5)

    gateway.write = _once("reservations/resize_reservation", fail, gateway.write)  # type: ignore[method-assign]
    try:
        out = await el.resize.resize(job.id, gpus=24)
    finally:
        del gateway.write
    assert isinstance(out, Resized), out
    assert failed and failed[0] not in out.added and len(out.added) == 8
    held = {g.uuid for g in out.reservation.gpus if g.held}
    assert failed[0] not in held and len(held) == 24
    await consistent(gateway, clock.now)
