"""A fabric import beside reservations on Neo4j: locks in one global order, so no deadlock.

`ingest_fabric` deleted a cluster's cables (write-locking their leaf switches) before it set the
hosts' fabric fields, while every reservation and release locks its hosts before their leaves.
A reservation holding a host and waiting for its leaf, and an import holding that leaf and
waiting for the host, deadlocked: Neo4j failed one of them (its driver then ran it again). Now
the import locks its hosts by name, then its switches by name, before it writes
(docs/store.md, "Lock first, then read, in one global order").

Here the driver's retries are off, so a deadlock is a failed statement: imports of one cluster's
fabric run in a loop beside workers reserving and releasing on it, and no statement may fail. A
bounded amount of work, not a time: with the old order a measurement saw 11-19 failed statements
in 30 s of this (docs/benchmarks.md, "Stop 54"), so this many imports would very likely meet one.
FalkorDB runs writes one at a time: Neo4j only.
"""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.ingest.service import ingest_fabric
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from graphsvc.store.neo4j_backend import Neo4jBackend
from tests.cluster_helpers import load
from tests.stores import STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")

IMPORTS = 150
WORKERS = 6


async def test_a_fabric_import_beside_reservations_never_deadlocks(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    cluster = await load(gw, "superpod-h100:sus=1")
    backend = Neo4jBackend(server.uri, user=server.user, password=server.password, max_retry_s=0)
    await backend.open()
    try:
        bare = Gateway(backend, timeout_s=gw.timeout_s)
        svc = ReservationService(bare)
        imports_left = IMPORTS
        cycles = 0

        async def imports() -> None:
            nonlocal imports_left
            while imports_left > 0:
                await ingest_fabric(bare, cluster.fabric())
                imports_left -= 1
                await asyncio.sleep(0)

        async def worker(n: int) -> None:
            nonlocal cycles
            sizes = (1, 2, 4, 8)
            while imports_left > 0:
                request = parse_request(f"{sizes[(n + cycles) % 4]}xH100")
                made = await svc.reserve(holder=f"w{n}", request=request, ttl_s=600)
                assert isinstance(made, Reservation), made
                await svc.release(made.id)
                cycles += 1

        await asyncio.gather(imports(), *(worker(n) for n in range(WORKERS)))
        assert cycles > 0, "the imports ran alone: nothing raced them"
        failed = {name: stat.errors for name, stat in bare.stats.items() if stat.errors}
        assert failed == {}, failed
    finally:
        await backend.close()
