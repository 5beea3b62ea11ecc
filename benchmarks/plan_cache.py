"""Benchmark: placement amid the rest of a service's traffic, FalkorDB's plan cache at its default
(25 plans) against the size the service sets (one per named statement), side by side (not a test).

The service as deployed (`benchmarks/served.py`: `graphsvc serve`, the embedded store) with one
cluster loaded. Each round two collectors' facts, an operator's explorer and a metrics scrape run first (the
GraphQL queries the explorer's pages send, a host's page, the /metrics scrape: statements other
than a scheduler's), then a scheduler asks each placement request once, timed. With 25 plans the churn
evicts the placement statements between rounds, and each is compiled again; with the sized cache
it stays. Reports placement p50/p99 per request, the store's CPU per round, and how many distinct
statements a round ran, for `GRAPHSVC_STORE_PLAN_CACHE=25` and for the default, alternately.

    python benchmarks/plan_cache.py --rounds 40 --pairs 2

Writes docs/benchmarks/plan_cache.json (or --out). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from ingest_throughput import documents
from served import Connection, Served, pct

ROOT = Path(__file__).resolve().parents[1]
PLACEMENTS = [
    "8xH100 nvlink=full-mesh",
    "4xH100 nvlink=full-mesh",
    "1xH100",
    "32xH100 ib-hops<=1",
    "32xH100 per-host=4 ib-hops<=1",
    "9xH100 nvlink=full-mesh",
]
# What the explorer's pages ask (graphsvc/ui/static/app.js); a host's page and the summary below.
EXPLORER = [
    "query { gpuGrid(first: 5000) { columns rows endCursor hasNextPage } }",
    "query { fabric(first: 500) { switches { name tier freeGpus } pageInfo { hasNextPage endCursor } } }",
    "query { leafLoad { leaf gpus freeGpus } }",
    "query { reservations(first: 500) { id holder } }",
    "query { sites { name gpus { model gpus free } } }",
    'query { search(text: "h1", first: 20) { kind name } }',
]


async def one_run(cache: str | None, rounds: int, profile: str) -> dict[str, Any]:
    with Served(store_plan_cache=cache) if cache is not None else Served() as service:
        service.cli("load", profile)
        conn = await Connection.open(service.port)
        leaf = (await conn.post("/graphql", {"query": "query { leafLoad { leaf } }"}))["data"]["leafLoad"][0]["leaf"]
        hosts = await conn.post("/graphql", {"query": f'query {{ leafHosts(leaf: "{leaf}") {{ name }} }}'})
        name = hosts["data"]["leafHosts"][0]["name"]
        other = hosts["data"]["leafHosts"][-1]["name"]
        churn = [
            *EXPLORER,
            f'query {{ leafHosts(leaf: "{leaf}") {{ name freeGpus stale }} }}',
            "query { clusterSummary { hosts gpus freeGpus staleHosts gpusByModel { model gpus } } }",
            "query { hosts(first: 50) { nodes { name } pageInfo { hasNextPage } } }",
            "query { gpus(first: 100) { nodes { uuid state } pageInfo { hasNextPage } } }",
            f'query {{ host(name: "{name}") {{ name stale gpus {{ uuid state }} nvlinkMatrix {{ rows }} '
            "placement { uuid pcieSwitch nvswitchLanes } } }",
            f'query {{ fabricPath(fromHost: "{name}", toHost: "{other}") {{ hops bottleneckGbps }} }}',
        ]

        pushes = iter([documents(profile, r)[:2] for r in range(1, rounds + 3)])

        async def operator() -> None:
            for host, body in next(pushes):  # two collectors' unchanged facts, newer collected_at
                await conn.send("PUT", f"/v1/hosts/{host}/facts", body)
            for q in churn:
                out = await conn.post("/graphql", {"query": q})
                assert "errors" not in out, out
            await conn.send("GET", f"/v1/hosts/{name}")
            service.statements()  # the /metrics scrape (its own statements)

        for _ in range(2):  # warm-up: every statement compiled once
            await operator()
            for text in PLACEMENTS:
                await conn.post("/v1/place", {"request": text})
        times: dict[str, list[float]] = {t: [] for t in PLACEMENTS}
        before = service.snapshot()
        for _ in range(rounds):
            await operator()
            for text in PLACEMENTS:
                t = time.perf_counter()
                await conn.post("/v1/place", {"request": text})
                times[text].append((time.perf_counter() - t) * 1000)
        costs = service.costs(before, rounds, "round")
        conn.close()
    return {
        "cache_size": cache or "sized (default)",
        "rounds": rounds,
        "distinct_statements_per_round": len(costs["statements"]),
        "store_cpu_ms_per_round": costs["store_cpu_ms_per_round"],
        "service_cpu_ms_per_round": costs["service_cpu_ms_per_round"],
        "placement": {
            t: {"p50_ms": round(statistics.median(v), 1), "p99_ms": round(pct(v, 0.99), 1)} for t, v in times.items()
        },
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--pairs", type=int, default=2, help="runs of each setting, alternately")
    ap.add_argument("--profile", default="superpod-h100:sus=4", help="synthetic cluster (graphsvc load)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "plan_cache.json"))
    args = ap.parse_args()
    runs = []
    for _ in range(args.pairs):
        for cache in ("25", None):
            result = await one_run(cache, args.rounds, args.profile)
            print(json.dumps(result), flush=True)
            runs.append(result)
    report = {
        "store": "embedded FalkorDB, appendfsync always",
        "cluster": f"{args.profile} through graphsvc load",
        "transport": "graphsvc serve (uvicorn) in its own process; one client, HTTP/1.1 keep-alive",
        "workload": "per round: two collectors' unchanged facts, the explorer's GraphQL queries, a host's page, "
        "a /metrics scrape; then each placement request once (timed)",
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(report, indent=1))  # noqa: ASYNC240 - after the measuring


if __name__ == "__main__":
    asyncio.run(main())
