"""Benchmark: reservations per second and latency with 16 concurrent clients (not a test).

Loads one DGX H100 SuperPOD scalable unit (31 hosts, 248 GPUs) into a fresh embedded
store with the production durability setting (appendfsync always), then 16 clients each
loop: reserve (a placement request, through GraphQL in-process) and release. Also runs the
explicit-GPU path. Writes docs/benchmarks/reservations.json.

    python benchmarks/reservation_throughput.py
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from graphsvc.api.app import create_app
from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.clusters import build

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = 16
PER_CLIENT = 40
RESERVE = """mutation($input: ReserveInput!) { reserve(input: $input) { __typename ... on Reservation { id } } }"""
RELEASE = """mutation($id: String!) { release(id: $id) { __typename } }"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(client: httpx.AsyncClient, make_input: Any) -> dict[str, Any]:
    latencies: list[float] = []
    outcomes: dict[str, int] = {}

    async def worker(n: int) -> None:
        rng = random.Random(n)
        for _ in range(PER_CLIENT):
            t = time.perf_counter()
            resp = await client.post("/graphql", json={"query": RESERVE, "variables": {"input": make_input(n, rng)}})
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
        "reserve_p50_ms": round(statistics.median(latencies), 2),
        "reserve_p99_ms": round(pct(latencies, 0.99), 2),
        "elapsed_s": round(elapsed, 2),
    }


async def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-rsv-"))
    try:
        settings = Settings(data_dir=data, appendfsync="always")
        async with open_store(settings) as gw:
            cluster = build("superpod-h100:sus=1")
            for h in cluster.hosts:
                await ingest_host(gw, h)
            await ingest_fabric(gw, cluster.fabric())
            uuids = [g.uuid for h in cluster.hosts for g in h.gpus]
            app = create_app(settings.model_copy(update={"insecure_dev": True}), gateway=gw)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b", timeout=60) as c:
                placed = await run(
                    c,
                    lambda n, rng: {
                        "holder": f"c{n}",
                        "ttlSeconds": 600,
                        "request": {"gpus": rng.choice([1, 2, 4, 8]), "model": "H100", "nvlink": "FULL_MESH"},
                    },
                )
                exact = await run(
                    c, lambda n, rng: {"holder": f"c{n}", "ttlSeconds": 600, "gpus": rng.sample(uuids, 4)}
                )
        report = {
            "clients": CLIENTS,
            "cluster": "1 DGX H100 SuperPOD SU: 31 hosts, 248 GPUs",
            "durability": "appendfsync always (every acknowledged reservation is on disk)",
            "placement request (1/2/4/8 H100 full mesh) then release": placed,
            "explicit 4 random GPUs then release": exact,
        }
        out = ROOT / "docs" / "benchmarks" / "reservations.json"
        out.write_text(json.dumps(report, indent=1))
        print(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
