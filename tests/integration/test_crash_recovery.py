"""kill -9 of the service and its store mid-ingest loses no acknowledged write."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess, private_neo4j

pytestmark = pytest.mark.slow


async def counter_drift(service: ServiceProcess) -> list[dict[str, object]]:
    if service.neo4j is not None:
        service.neo4j.start()
        settings = Settings(store=service.neo4j.uri, neo4j_password=service.neo4j.password, query_timeout_s=60)
    else:
        settings = Settings(data_dir=service.data_dir, appendfsync="no")
    async with open_store(settings, run_migrations=False) as gw:
        return await gw.read("counter_drift")


def test_kill_9_keeps_every_acknowledged_ingest(tmp_path: Path, store: str) -> None:
    cluster = build("superpod-h100:sus=2")
    service = ServiceProcess(tmp_path / "data", neo4j=private_neo4j(store, tmp_path))
    service.start()
    port = service.port
    acked: list[str] = []
    stop = threading.Event()

    def pump() -> None:
        # A long client time-out: on a slow machine a first ingest (Neo4j plans the statement) is slow,
        # and giving up early would leave the wait below with nothing to wait for.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            for host in cluster.hosts:
                if stop.is_set():
                    return
                try:
                    resp = client.put(
                        f"/v1/hosts/{host.hostname}/facts",
                        content=host.model_dump_json(),
                        headers={"content-type": "application/json"},
                    )
                except httpx.HTTPError:
                    return
                if resp.status_code == 200:
                    acked.append(host.hostname)

    threads = [threading.Thread(target=pump) for _ in range(1)]
    for t in threads:
        t.start()
    while len(acked) < 20 and any(t.is_alive() for t in threads):  # bounded: the pump ends
        time.sleep(0.005)
    service.kill9()
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) >= 20
    # Before the service's start-up check could repair anything: the counters agree with the
    # GPUs, because every ingest statement recounts them itself (no separate statement to lose).
    assert asyncio.run(counter_drift(service)) == []

    service.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            by_name = {h.hostname: h for h in cluster.hosts}
            for name in acked:
                body = client.get(f"/v1/hosts/{name}").json()
                assert [g["uuid"] for g in body["gpus"]] == [g.uuid for g in by_name[name].gpus], name
                assert len(body["nics"]) == 8
            health = client.get("/healthz").json()
            # nothing half-written: every stored host has all 8 GPUs
            assert health["gpus"] == 8 * health["hosts"]
            assert health["hosts"] >= len(acked)
    finally:
        service.stop()
