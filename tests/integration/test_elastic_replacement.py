"""Failed-GPU and stale-host replacement on both stores: layout kept, ranks mapped, failed freed."""

from __future__ import annotations

import json

from graphsvc.placement.request import parse_request
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.events import Event
from graphsvc.reservations.replacement import ReplacementService
from graphsvc.reservations.resize import Live
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import fail_gpu, load
from tests.integration.test_elastic_resize import consistent
from tests.integration.test_reservations import Clock
from tests.stores import adhoc


async def _run(gw: Gateway, name: str, text: str, params: dict[str, object]) -> None:
    await gw.backend.run(adhoc(name, text), params, write=True, timeout_s=60)


async def setup(gw: Gateway, labels: list[str]) -> tuple[ReservationService, Clock, Reservation, list[Event]]:
    await load(gw, "superpod-h100:sus=1")
    clock = Clock()
    await _run(gw, "fresh", "MATCH (h:Host) SET h.received_at = $now", {"now": clock.now})
    svc = ReservationService(gw, clock=clock)
    made = await svc.reserve(holder="trainer", request=parse_request("16xH100 per-host=8 rail-aligned"),
                             ttl_s=86400, labels=labels)  # fmt: skip
    assert isinstance(made, Reservation), made
    events: list[Event] = []

    async def record(e: Event) -> None:
        events.append(e)

    svc.events.observers.append(record)
    return svc, clock, made, events


async def test_a_failed_gpu_is_replaced_on_its_rail_and_freed(gateway: Gateway) -> None:
    svc, clock, made, events = await setup(gateway, ["replace=auto"])
    elastic = elastic_for(svc)
    before = await elastic.resize.live(made.id)
    assert isinstance(before, Live)
    victim = before.slots[3]
    await fail_gpu(gateway, victim.uuid)
    done = await elastic.replacement.check()
    assert len(done) == 1 and done[0].applied and done[0].layout_kept
    after = await elastic.resize.live(made.id)
    assert isinstance(after, Live)
    assert victim.uuid not in after.rank_order and len(after.rank_order) == 16
    new = after.slots[3]  # the failed GPU's rank, on its rail
    assert new.uuid == done[0].ranks[3] and new.rail == victim.rail
    replaced = [e for e in events if e.kind == "reservation.replaced"]
    assert replaced and json.loads(replaced[0].detail)["ranks"] == {"3": new.uuid}
    rows = await gateway.read("gpus_by_uuid", {"uuids": [victim.uuid]})
    assert rows[0]["state"] == "free"  # freed, and still marked failed so nobody is offered it
    await consistent(gateway, clock.now)


async def test_a_stale_host_is_proposed_not_taken_without_consent(gateway: Gateway) -> None:
    svc, clock, made, events = await setup(gateway, [])
    elastic = elastic_for(svc)
    before = await elastic.resize.live(made.id)
    assert isinstance(before, Live)
    host = before.slots[-1].host
    clock.now += 1000
    await _run(gateway, "fresh", "MATCH (h:Host) WHERE h.name <> $h SET h.received_at = $now",
               {"h": host, "now": clock.now})  # fmt: skip
    replacement = ReplacementService(elastic.resize, stale_after_s=300)
    proposals = await replacement.check()
    assert len(proposals) == 1 and not proposals[0].applied and proposals[0].layout_kept
    assert sorted(proposals[0].ranks) == list(range(8, 16))  # the second host's ranks
    assert [e.kind for e in events] == ["reservation.replacement_proposed"]
    assert len(await replacement.check()) == 1 and len(events) == 1  # proposed again, told once
    unchanged = await elastic.resize.live(made.id)
    assert isinstance(unchanged, Live) and unchanged.rank_order == before.rank_order
    applied = await replacement.check(apply=True)
    assert applied[0].applied
    moved = await elastic.resize.live(made.id)
    assert isinstance(moved, Live) and host not in {s.host for s in moved.slots}
    await consistent(gateway, clock.now)
