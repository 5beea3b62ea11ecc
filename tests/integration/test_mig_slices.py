"""MIG slices end to end on both stores: ingest, placement by profile, reserve/renew/release/expiry, races."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from topo_facts import HostFacts, MigSliceFact

from graphsvc.errors import ErrorKind
from graphsvc.ingest.service import IngestRejected, ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import (
    Conflict,
    Infeasible,
    LeaseExpired,
    Reservation,
    ReservationService,
    ValidationError,
)
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load
from tests.integration.test_reservation_reads import ended_reservations
from tests.queries import with_test_queries
from tests.stores import adhoc

# host index -> GPU index -> profiles of its GPU instances (an H100 80GB board).
LAYOUT = {
    0: {0: ["3g.40gb", "3g.40gb"], 1: ["3g.40gb", "4g.40gb"], 2: ["1g.10gb"] * 7},
    1: {0: ["3g.40gb", "3g.40gb"]},
}
MEMORY = {"3g.40gb": 40448, "4g.40gb": 40448, "1g.10gb": 9984, "7g.80gb": 81152}


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def with_mig(host: HostFacts, layout: dict[int, list[str]], *, tick: int = 0) -> HostFacts:
    gpus = []
    for g in host.gpus:
        profiles = layout.get(g.index)
        if profiles is None:
            gpus.append(g)
            continue
        slices = [
            MigSliceFact(uuid=f"MIG-{g.uuid[4:]}-{n}", gpu_instance_id=n + 1, profile=p, memory_mib=MEMORY[p])
            for n, p in enumerate(profiles)
        ]
        gpus.append(g.model_copy(update={"mig_mode": True, "mig_slices": slices}))
    return host.model_copy(update={"gpus": gpus, "collected_at": host.collected_at + timedelta(seconds=tick)})


def mig_cluster() -> SyntheticCluster:
    """One H100 scalable unit's first two hosts, with the MIG layout above."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=4)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = [with_mig(h, LAYOUT[i]) for i, h in enumerate(c.hosts[:2])]
    names = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in names]
    return c


@pytest.fixture
async def mig(gateway: Gateway) -> SyntheticCluster:
    c = mig_cluster()
    await load(gateway, c)
    return c


async def slices(gw: Gateway, *hosts: str) -> list[dict[str, Any]]:
    return [dict(r) for r in await gw.read("host_mig_slices", {"hosts": list(hosts)})]


async def invariants(gw: Gateway, now: float) -> None:
    assert await with_test_queries(gw).read("reservations/double_held_slices", {"now": now}) == []
    assert await with_test_queries(gw).read("reservations/double_holds", {"now": now}) == []


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = (await client.post("/graphql", json={"query": query, "variables": variables or {}})).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


# ---- ingest -------------------------------------------------------------------------------------


async def test_ingest_writes_slices_under_their_gpus(gateway: Gateway, mig: SyntheticCluster) -> None:
    a, b = (h.hostname for h in mig.hosts)
    rows = await slices(gateway, a, b)
    assert [(r["host"], r["gpu_index"], r["profile"]) for r in rows if r["host"] == b] == [(b, 0, "3g.40gb")] * 2
    assert len(rows) == 2 + 2 + 7 + 2
    assert {r["state"] for r in rows} == {"free"}
    first = rows[0]
    assert (first["gpu"], first["gpu_instance_id"], first["memory_mib"]) == (mig.hosts[0].gpus[0].uuid, 1, 40448)


async def test_reingest_replaces_the_hosts_slices(gateway: Gateway, mig: SyntheticCluster) -> None:
    host = mig.hosts[0]
    # GPU 1 repartitioned into one 7g.80gb, GPU 2 leaves MIG mode: its slices go with it.
    changed = with_mig(host, {0: ["3g.40gb", "3g.40gb"], 1: ["7g.80gb"]}, tick=1)
    changed = changed.model_copy(
        update={
            "gpus": [
                g.model_copy(update={"mig_mode": False, "mig_slices": []}) if g.index == 2 else g for g in changed.gpus
            ]
        }
    )
    assert (await ingest_host(gateway, changed)).applied
    rows = await slices(gateway, host.hostname)
    assert [(r["gpu_index"], r["profile"]) for r in rows] == [(0, "3g.40gb"), (0, "3g.40gb"), (1, "7g.80gb")]
    again = await ingest_host(gateway, changed.model_copy(update={"collected_at": changed.collected_at}))
    assert again.applied and await slices(gateway, host.hostname) == rows  # idempotent


async def test_a_held_slice_that_disappears_is_reported(gateway: Gateway, mig: SyntheticCluster) -> None:
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    b = mig.hosts[1]
    made = await svc.reserve(holder="job", request=parse_request(f"2x 3g.40gb exclude={mig.hosts[0].hostname}"))
    assert isinstance(made, Reservation) and len(made.slices) == 2
    lost = made.slices[0].uuid
    await ingest_host(gateway, with_mig(b, {0: ["3g.40gb"]}, tick=1).model_copy(
        update={"gpus": [g.model_copy(update={"mig_slices": [s for s in g.mig_slices if s.uuid != lost]})
                         for g in with_mig(b, {0: ["3g.40gb", "3g.40gb"]}, tick=1).gpus]}
    ))  # fmt: skip
    current = await svc.get(made.id)
    assert current is not None and current.lost_slices == [lost]
    assert [s.uuid for s in current.slices] == [made.slices[1].uuid]
    assert isinstance(await svc.renew(made.id, 600), LeaseExpired)  # the holder must stop: a slice is gone


async def test_a_slice_renew_without_a_ttl_keeps_its_lease(gateway: Gateway, mig: SyntheticCluster) -> None:
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, default_ttl_s=600)
    made = await svc.reserve(holder="job", request=parse_request("1x 3g.40gb"), ttl_s=7200)
    assert isinstance(made, Reservation) and len(made.slices) == 1
    clock.now += 50
    kept = await svc.renew(made.id)
    assert isinstance(kept, Reservation) and kept.expires_at == clock.now + 7200


# ---- placement ----------------------------------------------------------------------------------

PLACE_TEXT = """query($t: String!) { placementText(text: $t) { request candidates { rank }
  migCandidates { rank scope gpus hosts reason slices { uuid profile gpuUuid gpuIndex host memoryMiB } }
  infeasible { constraint message } } }"""


async def test_placement_of_two_3g_40gb_slices_on_one_gpu(client: httpx.AsyncClient, mig: SyntheticCluster) -> None:
    a, b = (h.hostname for h in mig.hosts)
    out = (await gql(client, PLACE_TEXT, {"t": "2x 3g.40gb limit=5"}))["placementText"]
    assert out["request"] == "2x 3g.40gb limit=5" and out["candidates"] == []  # never whole GPUs
    found = out["migCandidates"]
    assert [(c["scope"], c["hosts"], len(c["gpus"])) for c in found] == [("gpu", [a], 1), ("gpu", [b], 1)]
    assert {s["profile"] for c in found for s in c["slices"]} == {"3g.40gb"}
    assert found[0]["slices"][0]["gpuUuid"] == mig.hosts[0].gpus[0].uuid
    # Three do not fit one GPU: one host, two GPUs, before any spread.
    three = (await gql(client, PLACE_TEXT, {"t": "3x 3g.40gb"}))["placementText"]["migCandidates"]
    assert (three[0]["scope"], three[0]["hosts"], len(three[0]["gpus"])) == ("host", [a], 2)
    five = (await gql(client, PLACE_TEXT, {"t": "5x 3g.40gb"}))["placementText"]["migCandidates"]
    assert [(c["scope"], c["hosts"]) for c in five] == [("hosts", [a, b])]


async def test_structured_request_and_infeasible_answers(client: httpx.AsyncClient, mig: SyntheticCluster) -> None:
    query = """query($r: PlacementRequestInput!) { placement(request: $r) {
      migCandidates { slices { profile } } infeasible { constraint message nearestFeasible } } }"""
    out = (await gql(client, query, {"r": {"gpus": 7, "migProfile": "1g.10gb", "model": "H100"}}))["placement"]
    assert [len(c["slices"]) for c in out["migCandidates"]] == [7]
    none = (await gql(client, query, {"r": {"gpus": 6, "migProfile": "3g.40gb"}}))["placement"]
    assert none["migCandidates"] == [] and none["infeasible"][0]["constraint"] == "migProfile"
    assert none["infeasible"][0]["nearestFeasible"] == "5x 3g.40gb"
    wrong_model = (await gql(client, query, {"r": {"gpus": 1, "migProfile": "3g.40gb", "model": "A100"}}))["placement"]
    assert wrong_model["migCandidates"] == []


async def test_whole_gpu_requests_never_take_a_mig_gpu(client: httpx.AsyncClient, mig: SyntheticCluster) -> None:
    a = mig.hosts[0]
    partitioned = {g.uuid for g in a.gpus if g.mig_mode}
    out = (await gql(client, PLACE_TEXT.replace("candidates { rank }", "candidates { gpus { uuid } }"),
                     {"t": "5 limit=20"}))["placementText"]  # fmt: skip
    offered = {g["uuid"] for c in out["candidates"] for g in c["gpus"]}
    assert offered and not offered & partitioned


async def test_reserving_a_mig_gpu_whole_is_refused(gateway: Gateway, mig: SyntheticCluster) -> None:
    svc = ReservationService(gateway)
    whole = mig.hosts[0].gpus[0].uuid
    out = await svc.reserve(holder="job", gpus=[whole])
    assert isinstance(out, ValidationError) and out.field == "gpus" and "MIG" in out.message


# ---- reservations -------------------------------------------------------------------------------

RESERVE = """mutation($r: PlacementRequestInput!) { reserve(input: {request: $r, holder: "job", ttlSeconds: 600}) {
  __typename ... on Reservation { id state gpus { uuid } hosts { name } migSlices { uuid profile gpuUuid host held } }
  ... on ValidationError { field message } ... on Infeasible { reasons { constraint message } } } }"""


async def test_reserve_renew_release_slices(client: httpx.AsyncClient, gateway: Gateway, mig: SyntheticCluster) -> None:
    a = mig.hosts[0].hostname
    made = (await gql(client, RESERVE, {"r": {"gpus": 2, "migProfile": "3g.40gb"}}))["reserve"]
    assert made["__typename"] == "Reservation" and made["gpus"] == []
    held = made["migSlices"]
    assert len(held) == 2 and len({s["gpuUuid"] for s in held}) == 1 and all(s["held"] for s in held)
    assert made["hosts"] == [{"name": a}]
    states = {r["uuid"]: (r["state"], r["reservation"]) for r in await slices(gateway, a)}
    assert all(states[s["uuid"]] == ("reserved", made["id"]) for s in held)
    # The next request for two goes to the other GPU that has two.
    nxt = (await gql(client, PLACE_TEXT, {"t": "2x 3g.40gb"}))["placementText"]["migCandidates"]
    assert not {s["uuid"] for s in held} & {s["uuid"] for c in nxt for s in c["slices"]}
    renewed = await gql(client, f'mutation {{ renew(id: "{made["id"]}", ttlSeconds: 900) {{ __typename }} }}')
    assert renewed["renew"]["__typename"] == "Reservation"
    released = (await gql(client, f'mutation {{ release(id: "{made["id"]}") {{ __typename '
                                  "... on Reservation { state migSlices { held } } } }"))["release"]  # fmt: skip
    assert released["state"] == "released" and [s["held"] for s in released["migSlices"]] == [False, False]
    assert {r["state"] for r in await slices(gateway, a)} == {"free"}
    again = (await gql(client, f'mutation {{ release(id: "{made["id"]}") {{ __typename }} }}'))["release"]
    assert again["__typename"] == "Reservation"


async def test_expiry_frees_slices(gateway: Gateway, mig: SyntheticCluster) -> None:
    clock = Clock()
    svc = ReservationService(gateway, clock=clock)
    made = await svc.reserve(holder="job", request=parse_request("7x 1g.10gb"), ttl_s=60)
    assert isinstance(made, Reservation) and len(made.slices) == 7
    assert isinstance(await svc.reserve(holder="other", request=parse_request("1x 1g.10gb")), Infeasible)
    clock.now += 61
    # A lapsed hold counts as free at once, before the reaper runs...
    taken = await svc.reserve(holder="other", request=parse_request("1x 1g.10gb"), ttl_s=60)
    assert isinstance(taken, Reservation)
    # ...and the reaper ends the lapsed one and frees what it still marks.
    assert made.id in await svc.expire_due()
    ended = await svc.get(made.id)
    assert ended is not None and ended.state == "expired"
    assert sum(s.held for s in ended.slices) == 0
    states = [r["state"] for r in await slices(gateway, mig.hosts[0].hostname) if r["profile"] == "1g.10gb"]
    assert sorted(states) == ["free"] * 6 + ["reserved"]
    await invariants(gateway, clock.now)


async def test_racing_reserves_never_share_a_slice(gateway: Gateway, mig: SyntheticCluster) -> None:
    svc = ReservationService(gateway)
    outcomes = await asyncio.gather(
        *(svc.reserve(holder=f"job-{n}", request=parse_request("1x 3g.40gb")) for n in range(9))
    )
    made = [o for o in outcomes if isinstance(o, Reservation)]
    assert len(made) == 5  # every 3g.40gb slice there is, and no more
    assert all(isinstance(o, (Conflict, Infeasible)) for o in outcomes if not isinstance(o, Reservation))
    uuids = [s.uuid for r in made for s in r.slices]
    assert len(uuids) == len(set(uuids)) == 5
    await invariants(gateway, svc.clock())


async def test_an_unknown_profile_is_a_validation_error(client: httpx.AsyncClient, mig: SyntheticCluster) -> None:
    for profile in ("3g.41gb", "5g.40gb", "3g.40"):
        out = (await gql(client, RESERVE, {"r": {"gpus": 2, "migProfile": profile}}))["reserve"]
        assert out["__typename"] == "ValidationError" and out["field"] == "migProfile", out
        assert profile in out["message"]
    placed = (await gql(client, PLACE_TEXT, {"t": "2x 3g.41gb"}))["placementText"]
    assert placed["infeasible"][0]["constraint"] == "migProfile" and "3g.40gb" in placed["infeasible"][0]["message"]


async def test_a_gpu_held_whole_before_it_was_partitioned_offers_no_slice(
    gateway: Gateway, mig: SyntheticCluster
) -> None:
    a, b = mig.hosts
    svc = ReservationService(gateway)
    whole = b.gpus[3]
    held = await svc.reserve(holder="whole", gpus=[whole.uuid])
    assert isinstance(held, Reservation)
    # The operator partitions GPU 3 while its job still runs: the new slices wait for the GPU.
    assert (await ingest_host(gateway, with_mig(b, {0: ["3g.40gb"] * 2, 3: ["3g.40gb"] * 2}, tick=1))).applied
    ask = parse_request(f"1x 3g.40gb exclude={a.hostname} limit=10")
    found = await svc.engine.place(ask)
    assert {s.gpu for c in found.mig_candidates for s in c.slices} == {b.gpus[0].uuid}
    taken = [await svc.reserve(holder=f"j{n}", request=ask) for n in range(3)]
    assert [type(t).__name__ for t in taken] == ["Reservation", "Reservation", "Infeasible"]
    await svc.release(held.id)
    again = await svc.reserve(holder="j3", request=ask)
    assert isinstance(again, Reservation) and again.slices[0].gpu == whole.uuid


async def test_a_reservation_of_slices_is_not_resized(gateway: Gateway, mig: SyntheticCluster) -> None:
    from graphsvc.reservations.elastic import elastic_for

    svc = ReservationService(gateway)
    made = await svc.reserve(holder="job", request=parse_request("2x 3g.40gb"))
    assert isinstance(made, Reservation)
    out = await elastic_for(svc).resize.resize(made.id, gpus=4)
    assert isinstance(out, ValidationError) and "MIG" in out.message


# ---- preemption: slices are not preemptible (checkpoints.infeasible_reason) ---------------------------


async def test_slice_holders_are_never_preemption_victims(gateway: Gateway, mig: SyntheticCluster) -> None:
    svc = ReservationService(gateway)
    held = []
    while isinstance(got := await svc.reserve(holder="batch", request=parse_request("1x 3g.40gb"), priority=1,
                                             preemptible=True), Reservation):  # fmt: skip
        held.append(got)
    assert len(held) == 5  # every 3g.40gb slice is held by low-priority preemptible work
    plan = await svc.preemption_plan(parse_request("1x 3g.40gb"), priority=9)
    assert not plan.feasible and plan.victims == [] and plan.gpus == []
    assert "MIG slice reservations are never preemption victims" in plan.reason
    asked = await svc.reserve(holder="urgent", request=parse_request("1x 3g.40gb"), priority=9, allow_preemption=True)
    assert isinstance(asked, Infeasible)
    for r in held:  # nobody was displaced
        again = await svc.get(r.id)
        assert again is not None and again.state == "active"
    # A whole-GPU preemptor cannot take a MIG GPU either: the plan says why.
    whole = await svc.preemption_plan(parse_request("16xH100"), priority=9)
    assert not whole.feasible and "GPUs in MIG mode are never offered whole" in whole.reason
    await invariants(gateway, svc.clock())


async def test_a_mig_slice_uuid_of_another_host_is_refused_like_a_gpu_uuid(
    gateway: Gateway, mig: SyntheticCluster
) -> None:
    """A GPU uuid another host owns makes a document a conflict that writes nothing; a MIG slice
    uuid did not: the second host took the first's slice node, which then hung under GPUs of two
    hosts and named whichever host wrote last."""
    owner, other = mig.hosts[0], mig.hosts[1]
    stolen = next(s for g in owner.gpus for s in g.mig_slices)
    claim = other.model_copy(update={"collected_at": other.collected_at + timedelta(seconds=10)})
    gpus = [
        g.model_copy(update={"mig_slices": [g.mig_slices[0].model_copy(update={"uuid": stolen.uuid})]})
        if g.mig_slices
        else g
        for g in claim.gpus
    ]
    before = await gateway.backend.run(SLICE_HOSTS, {"u": stolen.uuid}, write=False, timeout_s=30)
    with pytest.raises(IngestRejected) as refused:
        await ingest_host(gateway, claim.model_copy(update={"gpus": gpus}))
    assert refused.value.kind is ErrorKind.CONFLICT and {"uuid": stolen.uuid, "host": owner.hostname} in (
        refused.value.detail or []
    )
    assert await gateway.backend.run(SLICE_HOSTS, {"u": stolen.uuid}, write=False, timeout_s=30) == before
    assert before == [{"host": owner.hostname, "gpu_hosts": [owner.hostname]}]


SLICE_HOSTS = adhoc(
    "slice_hosts",
    "MATCH (s:MigSlice {uuid: $u})<-[:HAS_SLICE]-(:GPU)<-[:HAS_GPU]-(h:Host) "
    "RETURN s.host AS host, collect(DISTINCT h.name) AS gpu_hosts",
)


@pytest.mark.parametrize("group_commit", [True, False], ids=["batch", "alone"])
async def test_a_late_release_racing_the_reaper_ends_slices_once(
    gateway: Gateway, mig: SyntheticCluster, group_commit: bool
) -> None:
    """A release that came after the reaper had ended a reservation of slices (and before it freed
    them) published a second end event for it (a helper's trial)."""
    clock = Clock()
    svc = ReservationService(gateway, clock=clock, group_commit=group_commit)
    ends = ended_reservations(svc)
    made = [await svc.reserve(holder=f"m{i}", request=parse_request("2x 1g.10gb"), ttl_s=60) for i in range(3)]
    assert all(isinstance(r, Reservation) for r in made)
    held = [r for r in made if isinstance(r, Reservation)]
    clock.now += 100
    write = gateway.write
    late = held[0].id

    async def release_right_after_the_reaper_ends_it(name: str, params: dict[str, Any] | None = None) -> Any:
        rows = await write(name, params)
        if name == "reservations/expired_without_gpus" and any(late in r["ids"] for r in rows):
            await svc.release(late)  # before the reaper frees the slices
        return rows

    gateway.write = release_right_after_the_reaper_ends_it  # type: ignore[method-assign,assignment]
    try:
        await asyncio.gather(*(svc.release(r.id) for r in held[1:]), svc.expire_due())
    finally:
        gateway.write = write  # type: ignore[method-assign]
    assert sorted(ends) == sorted(r.id for r in held)  # each exactly once
    for r in held:
        ended = await svc.read(r.id)
        assert ended is not None and (ended.state, ended.ended_at) == ("expired", r.expires_at)
        assert not any(s.held for s in ended.slices)
    await invariants(gateway, clock.now)
