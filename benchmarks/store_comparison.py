"""Benchmark: the embedded FalkorDB and a real Neo4j 5 side by side, same machine, same run (not a test).

For each store: load one DGX H100 SuperPOD scalable unit plus a GB200 NVL72 rack (the same
synthetic cluster), warm up, then measure
- placement latency (GraphQL `placementText`, in-process) for single-host, NVL72 and
  multi-host requests: p50/p99 over a fixed number of calls;
- reservation throughput: 16 clients, each reserve (a placement request) then release,
  through GraphQL in-process; reservations/s and reserve p50/p99;
- ingest: host fact documents/s with 8 concurrent writers.
Both stores run with their production durability (FalkorDB appendfsync always; Neo4j's
transaction log is flushed on every commit). The Neo4j server is the project's local one
(tools/neo4j-local, 1 GiB heap). Writes docs/benchmarks/stores.json.

    python benchmarks/store_comparison.py
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from graphsvc.api.app import create_app
from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.neo4j_local import LocalNeo4j
from graphsvc.synthetic.clusters import build

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "demo:sus=1,nvl72_racks=1,a100_hosts=0,l40s_hosts=0"
CLIENTS = 16
PER_CLIENT = 25
PLACEMENT_CALLS = 60
QUERY = "query($t: String!) { placementText(text: $t) { candidates { score } } }"
RESERVE = """mutation($input: ReserveInput!) { reserve(input: $input) { __typename ... on Reservation { id } } }"""
RELEASE = """mutation($id: String!) { release(id: $id) { __typename } }"""
REQUESTS = {
    "single host: 4xH100 full mesh": "4xH100 nvlink=full-mesh",
    "NVL72: 16xGB200 full mesh": "16xGB200 nvlink=full-mesh",
    "multi-host: 32xH100 per-host=8 ib-hops<=1": "32xH100 per-host=8 ib-hops<=1",
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def placement(client: httpx.AsyncClient) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, text in REQUESTS.items():
        ms: list[float] = []
        for i in range(PLACEMENT_CALLS + 5):
            t = time.perf_counter()
            body = (await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})).json()
            if i >= 5:  # the first calls plan the statements (Neo4j) and fill caches
                ms.append((time.perf_counter() - t) * 1000)
            assert "errors" not in body and body["data"]["placementText"]["candidates"], body
        out[label] = {"p50_ms": round(pct(ms, 0.5), 2), "p99_ms": round(pct(ms, 0.99), 2)}
    return out


async def reservations(client: httpx.AsyncClient) -> dict[str, Any]:
    latencies: list[float] = []
    outcomes: dict[str, int] = {}

    async def worker(n: int) -> None:
        rng = random.Random(n)
        for _ in range(PER_CLIENT):
            request = {"gpus": rng.choice([1, 2, 4, 8]), "model": "H100", "nvlink": "FULL_MESH"}
            t = time.perf_counter()
            resp = await client.post(
                "/graphql",
                json={
                    "query": RESERVE,
                    "variables": {"input": {"holder": f"c{n}", "ttlSeconds": 600, "request": request}},
                },
            )
            latencies.append((time.perf_counter() - t) * 1000)
            out = resp.json()["data"]["reserve"]
            outcomes[out["__typename"]] = outcomes.get(out["__typename"], 0) + 1
            if out["__typename"] == "Reservation":
                await client.post("/graphql", json={"query": RELEASE, "variables": {"id": out["id"]}})

    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(CLIENTS)))
    elapsed = time.perf_counter() - started
    return {
        "attempts": len(latencies),
        "outcomes": outcomes,
        "reservations_per_s": round(outcomes.get("Reservation", 0) / elapsed, 1),
        "reserve_p50_ms": round(statistics.median(latencies), 1),
        "reserve_p99_ms": round(pct(latencies, 0.99), 1),
    }


async def measure(kind: str, settings: Settings) -> dict[str, Any]:
    cluster = build(PROFILE)
    async with open_store(settings) as gw:
        first = cluster.hosts[:2]
        for h in first:  # warm-up: plans the ingest statement once
            await ingest_host(gw, h)
        rest = cluster.hosts[2:]
        queue = list(rest)
        started = time.perf_counter()

        async def writer() -> None:
            while queue:
                await ingest_host(gw, queue.pop())

        await asyncio.gather(*(writer() for _ in range(8)))
        ingest_s = time.perf_counter() - started
        await ingest_fabric(gw, cluster.fabric())
        app = create_app(settings.model_copy(update={"insecure_dev": True}), gateway=gw)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b", timeout=120) as c:
            lat = await placement(c)
            rsv = await reservations(c)
        result = {
            "store": kind,
            "gpus": cluster.gpu_count,
            "hosts": len(cluster.hosts),
            "ingest_docs_per_s": round(len(rest) / ingest_s, 1),
            "placement": lat,
            "reservations": rsv,
        }
        print(json.dumps(result), file=sys.stderr)
        return result


async def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-stores-"))
    # The mutation limiter protects a shared service; the benchmark measures the service itself.
    limits: dict[str, Any] = {"mutation_rate_per_minute": 1e9, "mutation_burst": 1_000_000, "query_timeout_s": 120}
    results = []
    try:
        results.append(
            await measure("embedded FalkorDB", Settings(data_dir=data / "falkordb", appendfsync="always", **limits))
        )
        neo = LocalNeo4j(data / "neo4j")
        neo.start()
        try:
            settings = Settings(store=neo.uri, neo4j_password=neo.password, data_dir=data / "unused", **limits)
            results.append(await measure("Neo4j 5.26 (local)", settings))
        finally:
            neo.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    report = {
        "cluster": PROFILE,
        "clients": CLIENTS,
        "placement_calls": PLACEMENT_CALLS,
        "results": results,
    }
    out = ROOT / "docs" / "benchmarks" / "stores.json"
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
