"""The service while its Neo4j server is down: a clear error at once, never a hang, and back
by itself when the server is. (The embedded store's own supervision is tested with the
embedded store's fault tests.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.cli import push_cluster
from graphsvc.store.neo4j_local import LocalNeo4j
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess

pytestmark = pytest.mark.slow

RESERVE = """mutation { reserve(input: {holder: "outage", ttlSeconds: 600, request: {gpus: 1, model: "L40S"}}) {
  __typename ... on Reservation { id } } }"""


def test_neo4j_down_answers_503_quickly_and_recovers(tmp_path: Path) -> None:
    neo = LocalNeo4j(tmp_path / "neo4j")
    service = ServiceProcess(tmp_path / "data", neo4j=neo)
    service.start(timeout_s=180)
    try:
        asyncio.run(push_cluster(service.url, build("l40s:hosts=2")))
        with httpx.Client(base_url=service.url, timeout=60) as c:
            assert c.post("/graphql", json={"query": RESERVE}).json()["data"]["reserve"]["__typename"] == "Reservation"
            neo.kill()  # the database alone goes away; the service stays up
            # Bounded work, not time: each call must come back (the client's 60 s limit would
            # raise) with a 503 that says what is wrong, not hang in the driver's retries.
            for _ in range(3):
                health = c.get("/healthz")
                assert health.status_code == 503, health.text
                out = c.post("/graphql", json={"query": RESERVE})
                assert out.status_code in (200, 503), out.text
                text = out.text.lower()
                assert "unavailable" in text or "unreachable" in text, out.text
                assert "traceback" not in text
            neo.start()  # same port, same data: Neo4j recovers from its transaction log
            for _ in range(60):
                if c.get("/healthz").status_code == 200:
                    break
                time.sleep(1)
            assert c.get("/healthz").status_code == 200
            again = c.post("/graphql", json={"query": RESERVE}).json()
            assert again["data"]["reserve"]["__typename"] == "Reservation", again
    finally:
        service.stop()
