"""Grows and replacements keep a reservation within its IB hop limit (graphsvc/reservations/reach.py),
on both stores, on leaf islands no switch joins (a probe's cases, against the brute-force oracle).

They judged layout only: a grow said "the layout is kept" for a host with no path to the job (it
sat on a leaf the job used for that rail), and replaceFailed moved a job reserved under
`ib-hops<=1` onto a host of another island.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.replacement import ReplacementService
from graphsvc.reservations.resize import ElasticService
from graphsvc.reservations.service import Infeasible, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests import placement_oracle as oracle
from tests.cluster_helpers import occupy
from tests.helpers import h100
from tests.integration.test_reservations import Clock
from tests.stores import adhoc


def islands(hosts: list[HostFacts], leaf_of: Callable[[str, int], str]) -> FabricFacts:
    """Leaves with no switch above them: hosts share a leaf or have no path at all."""
    cables = [
        NICUplink(host=h.hostname, nic=n.name, switch=leaf_of(h.hostname, n.rail or 0), bandwidth_gbps=50.0)
        for h in hosts
        for n in h.nics
    ]
    leaves = sorted({c.switch for c in cables})
    return FabricFacts(
        cluster="default", source="test", switches=[FabricSwitch(name=n, tier=SwitchTier.LEAF) for n in leaves],
        nic_uplinks=cables,
    )  # fmt: skip


async def setup(gateway: Gateway, leaves: dict[str, tuple[str, str]]) -> tuple[oracle.Snapshot, ReservationService]:
    """Hosts A, B, C: rails 0-3 on the first leaf named, 4-7 on the second."""
    hosts = [h100(name, seed=n + 1) for n, name in enumerate(leaves)]
    for host in hosts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, islands(hosts, lambda h, rail: leaves[h][rail >= 4]))
    clock = Clock()
    fresh = adhoc("fresh", "MATCH (h:Host) SET h.received_at = $now")
    await gateway.backend.run(fresh, {"now": clock.now}, write=True, timeout_s=60)
    return await oracle.snapshot(gateway), ReservationService(gateway, clock=clock)


async def spans(svc: ReservationService, snap: oracle.Snapshot, rid: str) -> dict[tuple[str, str], int | None]:
    now = await svc.get(rid)
    assert now is not None
    hosts = sorted({g.host for g in now.gpus if g.held})
    return {(a, b): oracle.hops(snap, a, b) for a, b in itertools.combinations(hosts, 2)}


async def test_a_grow_keeping_the_layout_adds_no_host_without_a_path(gateway: Gateway) -> None:
    """The job holds rails 4-7 of A (leaf L1) and B (L3); C's rails 4-7 are on L3 too, its 0-3
    on L9: on "the job's leaf for each rail", yet no path to A."""
    snap, svc = await setup(gateway, {"A": ("L0", "L1"), "B": ("L0", "L3"), "C": ("L9", "L3")})
    rails = {n.name: n.rail for h in (h100("A", seed=1), h100("B", seed=2), h100("C", seed=3)) for n in h.nics}
    busy = [
        a.gpu_uuid
        for h in (h100("A", seed=1), h100("B", seed=2), h100("C", seed=3))
        for a in h.gpu_nic_affinity
        if (rails.get(a.nic) or 0) < 4
    ]
    await occupy(gateway, busy)
    made = await svc.reserve(holder="job", request=parse_request("8xH100 per-host=4 ib-hops<=1"), ttl_s=3600)
    assert isinstance(made, Reservation) and sorted({g.host for g in made.gpus}) == ["A", "B"], made
    grown = await ElasticService(svc).resize(made.id, gpus=12)
    assert isinstance(grown, Infeasible), grown  # it added C: "the layout is kept"
    assert all(v is not None and v <= 1 for v in (await spans(svc, snap, made.id)).values())


async def test_replacing_a_failed_gpu_keeps_the_hop_limit(gateway: Gateway) -> None:
    """A on L1, B on L1 and L2, C on L2 (half busy): `16xH100 per-host=8 ib-hops<=1` takes A and B;
    A's failed GPU has no spare within one hop, and C (no path to A) is not one."""
    snap, svc = await setup(gateway, {"A": ("L1", "L1"), "B": ("L1", "L2"), "C": ("L2", "L2")})
    await occupy(gateway, [g.uuid for g in h100("C", seed=3).gpus if g.index < 4])
    made = await svc.reserve(holder="job", request=parse_request("16xH100 per-host=8 ib-hops<=1"), ttl_s=3600)
    assert isinstance(made, Reservation) and sorted({g.host for g in made.gpus}) == ["A", "B"], made
    failed = next(g.uuid for g in made.gpus if g.host == "A")
    mark = adhoc("fail", "MATCH (g:GPU {uuid: $u}) SET g.health = 'failed'")
    await gateway.backend.run(mark, {"u": failed}, write=True, timeout_s=60)
    done = await ReplacementService(ElasticService(svc)).replace(made.id, [failed], apply=True)
    assert done is not None and not done.applied, done  # it took a GPU of C
    assert all(v is not None and v <= 1 for v in (await spans(svc, snap, made.id)).values())
    grown = await ElasticService(svc).resize(made.id, gpus=20, keep_layout=False)
    assert isinstance(grown, Infeasible), grown  # C again, layout or not


async def test_a_job_whose_own_hosts_no_longer_meet_still_grows_on_them(gateway: Gateway) -> None:
    """The job's own hosts always qualify, and none is judged against another: a fabric re-import
    that moved B to another leaf island left `ib-hops<=1` with no host to grow on, its own
    included, and a job placed with no limit across islands could not have a failed GPU replaced
    by a spare on its own host (a review's cases)."""
    _snap, svc = await setup(gateway, {"A": ("L0", "L0"), "B": ("L0", "L0")})
    made = await svc.reserve(holder="job", request=parse_request("8xH100 per-host=4 ib-hops<=1"), ttl_s=3600)
    assert isinstance(made, Reservation) and sorted({g.host for g in made.gpus}) == ["A", "B"], made
    moved = [h100("A", seed=1), h100("B", seed=2)]
    await ingest_fabric(gateway, islands(moved, lambda h, rail: "L0" if h == "A" else "L5"))
    grown = await ElasticService(svc).resize(made.id, gpus=10, keep_layout=False)
    assert not isinstance(grown, Infeasible), grown
    other = await svc.reserve(holder="wide", request=parse_request("4xH100 per-host=2"), ttl_s=3600)
    assert isinstance(other, Reservation) and len({g.host for g in other.gpus}) == 2, other  # no limit: both islands
    failed = other.gpus[0].uuid
    mark = adhoc("fail", "MATCH (g:GPU {uuid: $u}) SET g.health = 'failed'")
    await gateway.backend.run(mark, {"u": failed}, write=True, timeout_s=60)
    done = await ReplacementService(ElasticService(svc)).replace(other.id, [failed], apply=True)
    assert done is not None and done.applied, done
