"""The Neo4j 5 backend against a real neo4j:5 container (testcontainers).

These run wherever a Docker engine answers; elsewhere they skip and say why.
The same named queries as the embedded store run here, through managed transactions.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from graphsvc.ingest.service import IngestRejected, ingest_fabric, ingest_host
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate, stored_version
from graphsvc.store.neo4j_backend import Neo4jBackend
from graphsvc.store.schema import GRAPH_VERSION
from graphsvc.synthetic.clusters import build
from tests.helpers import as_json, h100, with_changes


def _docker_problem() -> str | None:
    try:
        import docker

        docker.from_env(timeout=3).ping()  # type: ignore[attr-defined]  # mypy sees the repo's docker/ dir
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine to talk to
        return f"no Docker engine for testcontainers to start neo4j:5 ({type(exc).__name__})"
    return None


_PROBLEM = _docker_problem()
pytestmark = [pytest.mark.neo4j, pytest.mark.skipif(_PROBLEM is not None, reason=_PROBLEM or "")]


@pytest.fixture(scope="module")
def neo4j_uri() -> Iterator[tuple[str, str, str]]:
    from testcontainers.neo4j import Neo4jContainer

    with Neo4jContainer("neo4j:5", password="graphsvc-test") as container:
        yield container.get_connection_url(), "neo4j", "graphsvc-test"


@pytest.fixture
async def neo(neo4j_uri: tuple[str, str, str]) -> AsyncIterator[Gateway]:
    uri, user, password = neo4j_uri
    backend = Neo4jBackend(uri, user=user, password=password)
    await backend.open()
    gw = Gateway(backend)
    await gw.write("reset_graph")
    await migrate(gw)
    try:
        yield gw
    finally:
        await backend.close()


async def test_migrations_and_constraints(neo: Gateway) -> None:
    assert await stored_version(neo) == GRAPH_VERSION
    await migrate(neo)  # idempotent


async def test_ingest_is_idempotent_and_atomic(neo: Gateway) -> None:
    facts = h100()
    await ingest_host(neo, facts)
    first = await neo.read("export_relationships", {"limit": 100_000})
    await ingest_host(neo, facts)
    assert sorted(map(str, await neo.read("export_relationships", {"limit": 100_000}))) == sorted(map(str, first))
    other: dict[str, Any] = as_json(h100("node-b", seed=3))
    other["gpus"][0]["uuid"] = facts.gpus[0].uuid
    other["gpu_nic_affinity"][0]["gpu_uuid"] = facts.gpus[0].uuid
    with pytest.raises(IngestRejected):
        await ingest_host(neo, with_changes(h100("node-b", seed=3), **other))
    counts = (await neo.read("health_counts"))[0]
    assert counts["hosts"] == 1


async def test_demo_slice_loads(neo: Gateway) -> None:
    cluster = build("demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    for host in cluster.hosts:
        await ingest_host(neo, host)
    await ingest_fabric(neo, cluster.fabric())
    counts = (await neo.read("health_counts"))[0]
    assert counts["hosts"] == len(cluster.hosts)
    assert {m["model"]: m["gpus"] for m in counts["models"]} == cluster.gpus_by_model()
    assert (await neo.read("stale_hosts_count", {"cutoff": time.time() - 3600}))[0]["stale"] == 0


async def test_reservations_are_atomic_on_neo4j(neo: Gateway) -> None:
    """The same conditional write under read committed: 16 clients race for 8 GPUs."""
    import asyncio

    from graphsvc.reservations.service import Reservation, ReservationService

    cluster = build("l40s:hosts=2")
    for host in cluster.hosts:
        await ingest_host(neo, host)
    svc = ReservationService(neo)
    uuids = [g.uuid for h in cluster.hosts for g in h.gpus]
    outcomes = await asyncio.gather(*(svc.reserve(holder=f"c{i}", gpus=uuids[i % 4 : i % 4 + 2]) for i in range(16)))
    won = [o for o in outcomes if isinstance(o, Reservation)]
    held = [g.uuid for r in won for g in r.gpus]
    assert len(held) == len(set(held))
    assert await neo.read("reservations/double_holds", {"now": time.time()}) == []
