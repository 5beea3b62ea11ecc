"""32 concurrent clients, 2,000 overlapping reserve attempts: no GPU is ever handed out twice."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.fastpath import SCAN_EVERY_HOST_UP_TO, candidate_read
from graphsvc.reservations.service import Conflict, Infeasible, Reservation, ReservationService
from graphsvc.store.backend import Row
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_pcie_hosts, add_spines, add_superpod_h100
from graphsvc.synthetic.hosts import a100_pcie
from tests.cluster_helpers import load
from tests.queries import with_test_queries

pytestmark = pytest.mark.slow

CLIENTS = 32
ATTEMPTS = 2000
REQUESTS = ["1xH100", "2xH100 nvlink=full-mesh", "4xH100 nvlink=full-mesh", "8xH100 nvlink=full-mesh",
            "16xH100 per-host=8 ib-hops<=1", "2xA100 nvlink=full-mesh", "3xA100"]  # fmt: skip


def small_cluster() -> SyntheticCluster:
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=3)
    c.hosts = c.hosts[:4]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    leaves += add_pcie_hosts(c, a100_pcie, 2, seed=3, prefix="a100")
    add_spines(c, leaves, prefix="spine", sus=1)
    return c


async def confirmed(gateway: Gateway, check: str, key: tuple[str, ...]) -> list[Row]:
    """The rows of an invariant check that a second read, started after the first ended, shows again.

    Neo4j reads committed data, not a snapshot: one statement can see a reservation still active when it
    scans it and its GPUs already freed by a release that commits a moment later (held 0 of 4), a state
    no transaction ever wrote. Every write here commits once, so such a row cannot appear in a read that
    starts after that commit; a real violation (a write that left the graph wrong) stays and shows in
    both reads.
    """
    queries = with_test_queries(gateway)

    def keyed(rows: list[Row]) -> dict[tuple[str, ...], Row]:
        return {tuple(str(sorted(r[k]) if isinstance(r[k], list) else r[k]) for k in key): r for r in rows}

    first = keyed(await queries.read(check, {"now": time.time()}))
    if not first:
        return []
    second = keyed(await queries.read(check, {"now": time.time()}))
    return [row for k, row in second.items() if k in first]


@pytest.mark.parametrize("scan_up_to", [SCAN_EVERY_HOST_UP_TO, -1], ids=["scan", "seek"])
async def test_storm_never_double_books(gateway: Gateway, scan_up_to: int) -> None:
    """Both forms of the one-host reserves (a scan of every host on a small cluster, the free-count
    index seek on a large one; here forced) under concurrent reserves and releases."""
    cluster = await load(gateway, small_cluster())
    all_uuids = [g.uuid for h in cluster.hosts for g in h.gpus]
    svc = ReservationService(gateway, default_ttl_s=3600, scan_every_host_up_to=scan_up_to)
    counts = {"ok": 0, "conflict": 0, "infeasible": 0, "other": 0}
    live: list[Reservation] = []
    attempts = iter(range(ATTEMPTS))
    stop = asyncio.Event()
    violations: list[object] = []

    async def client(n: int) -> None:
        rng = random.Random(n)
        for _ in attempts:
            if rng.random() < 0.3:
                out = await svc.reserve(holder=f"c{n}", gpus=rng.sample(all_uuids, rng.randint(1, 4)))
            else:
                out = await svc.reserve(holder=f"c{n}", request=parse_request(rng.choice(REQUESTS)))
            if isinstance(out, Reservation):
                counts["ok"] += 1
                assert len(out.gpus) > 0 and all(g.held for g in out.gpus)
                live.append(out)
            elif isinstance(out, Conflict):
                counts["conflict"] += 1
            elif isinstance(out, Infeasible):
                counts["infeasible"] += 1
            else:
                counts["other"] += 1
            if live and rng.random() < 0.5:  # churn: release someone's reservation
                await svc.release(live.pop(rng.randrange(len(live))).id)

    async def checker() -> None:
        while not stop.is_set():
            violations.extend(await confirmed(gateway, "reservations/double_holds", ("uuid", "holders")))
            violations.extend(await confirmed(gateway, "reservations/incomplete_reservations", ("id",)))
            await asyncio.sleep(0.05)

    watch = asyncio.create_task(checker())
    await asyncio.gather(*(client(n) for n in range(CLIENTS)))
    stop.set()
    await watch
    assert violations == []
    assert counts["ok"] + counts["conflict"] + counts["infeasible"] == ATTEMPTS, counts
    assert counts["other"] == 0
    assert counts["ok"] > 100 and counts["conflict"] + counts["infeasible"] > 0, counts
    batch = candidate_read("reservations/reserve_in_host_batch", svc.engine.facts.hosts, scan_up_to)
    assert gateway.stats[batch].calls > 0  # the statement under test ran
    now = time.time()
    assert await with_test_queries(gateway).read("reservations/double_holds", {"now": now}) == []
    assert await with_test_queries(gateway).read("reservations/incomplete_reservations", {"now": now}) == []
    # Counters agree with the GPUs after the storm.
    held = {g.uuid for r in live for g in r.gpus}
    states = {r["uuid"]: r["state"] for r in await gateway.read("gpus_by_uuid", {"uuids": all_uuids})}
    assert {u for u, s in states.items() if s == "reserved"} == held
    rows = await gateway.read("largest_free_hosts", {"top": 8, "limit": 100})
    free_by_host = {r["unit"]: r["free"] for r in rows}
    for h in cluster.hosts:
        expected = sum(1 for g in h.gpus if g.uuid not in held)
        assert free_by_host.get(h.hostname, 0) == expected, h.hostname


async def test_concurrent_multi_host_reserves_spread_instead_of_colliding(gateway: Gateway) -> None:
    """Twelve `16xH100 per-host=8` reserves at once on 31 idle hosts (room for 15): all ranked the
    same candidates, tried them in rank order and most answered Conflict (21 of 30 in a trial).
    After a collision each tries the rest in its own order and looks again among equally good
    hosts in its own order: all of them were placed in 16 runs of both stores; the bound leaves
    room for an unlucky interleaving (before: 2-5 placed)."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    request = parse_request("16xH100 per-host=8")
    outs = await asyncio.gather(
        *(svc.reserve(owner="t", holder=f"job{i}", request=request, ttl_s=600) for i in range(12))
    )
    made = [o for o in outs if isinstance(o, Reservation)]
    assert len(made) >= 8, [o for o in outs if not isinstance(o, Reservation)]
    held = [g.uuid for r in made for g in r.gpus]
    assert len(held) == len(set(held)) == len(made) * 16
