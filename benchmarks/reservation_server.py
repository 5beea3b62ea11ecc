"""Benchmark: reservations per second against the running service, clients in another process (not a test).

`reservation_throughput.py` drives the app in-process; here the service runs as deployed
(`benchmarks/served.py`: `graphsvc serve`, uvicorn, the embedded store with appendfsync
always) with one DGX H100 SuperPOD scalable unit (31 hosts, 248 GPUs) pushed through its ingest
API by `graphsvc load`, and N clients in this process, one keep-alive connection each (on uvloop,
as the service runs: their CPU shares the machine with the service and its store). Each
client loops the REST fast path: reserve (1, 2, 4 or 8 H100 full mesh, random per cycle), then
release. Reports reservations/s, reserve and release p50/p99 (ms), CPU per cycle of the service
process, its store and the clients (from /proc), and store statements per cycle (the service's
/metrics); a cycle is one reserve attempt and, when it got GPUs, its release (`outcomes` counts
the answers: at 64 clients the requests outnumber the 248 GPUs at times, and some reserves are
answered NoCapacity).

    python benchmarks/reservation_server.py --clients 1,16,64 --cycles 60
    python benchmarks/reservation_server.py --clients 16 --profile superpod-h100:sus=16 --busy 0.5   # a cluster in use
    python benchmarks/reservation_server.py --clients 16 --cycles 600 --rounds 3   # sustained: ~15 s a round
    python benchmarks/reservation_server.py --clients 16 --cycles 600 --auth   # as schedulers, with tokens

`--rounds` repeats each client count's run back to back on the same store: the embedded store
re-indexes every node a write touches and collects the stale index entries only every 30 s, so
the first seconds of a fresh store are its best (docs/benchmarks.md, "Stop 40").

Writes docs/benchmarks/reservations_server.json (or --out). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from machine_speed import reference_ms
from served import Connection, Served, pct

ROOT = Path(__file__).resolve().parents[1]


async def run(service: Served, clients: int, cycles: int) -> dict[str, Any]:
    conns = [await Connection.open(service.port, service.tokens.get("scheduler")) for _ in range(clients)]
    latencies: list[float] = []
    releases: list[float] = []
    outcomes: dict[str, int] = {}

    async def worker(n: int) -> None:
        rng = random.Random(n)
        conn = conns[n]
        for _ in range(cycles):
            request = f"{rng.choice([1, 2, 4, 8])}xH100 nvlink=full-mesh"
            body = {"holder": f"c{n}", "ttlSeconds": 600, "request": request}
            t = time.perf_counter()
            out = await conn.post("/v1/reservations", body)
            latencies.append((time.perf_counter() - t) * 1000)
            outcomes[out["kind"]] = outcomes.get(out["kind"], 0) + 1
            if out["kind"] == "Reservation":
                t = time.perf_counter()
                await conn.post(f"/v1/reservations/{out['id']}/release")
                releases.append((time.perf_counter() - t) * 1000)

    before = service.snapshot()
    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(clients)))
    elapsed = time.perf_counter() - started
    costs = service.costs(before, len(latencies), "cycle")
    for conn in conns:
        conn.close()
    return {
        "api": "rest, over a socket",
        "clients": clients,
        "attempts": len(latencies),
        "outcomes": outcomes,
        "reservations_per_s": round(outcomes.get("Reservation", 0) / elapsed, 1),
        "reserve_p50_ms": round(statistics.median(latencies), 1),
        "reserve_p99_ms": round(pct(latencies, 0.99), 1),
        "release_p50_ms": round(statistics.median(releases), 1) if releases else None,
        "release_p99_ms": round(pct(releases, 0.99), 1) if releases else None,
        **costs,
    }


async def occupy(service: Served, fraction: float) -> int:
    """Reserve about `fraction` of the cluster's GPUs, chosen at random per host (seed 42), so
    hosts hold every free count, as a cluster in use does; returns how many were reserved."""
    conn = await Connection.open(service.port, service.tokens.get("operator"))
    by_host: dict[str, list[str]] = {}
    after: str | None = None
    while True:
        query = (
            "query($a: String) { gpus(first: 1000, after: $a) "
            "{ nodes { uuid host { name } } pageInfo { hasNextPage endCursor } } }"
        )
        page = (await conn.post("/graphql", {"query": query, "variables": {"a": after}}))["data"]["gpus"]
        for gpu in page["nodes"]:
            by_host.setdefault(gpu["host"]["name"], []).append(gpu["uuid"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    rng = random.Random(42)
    taken = 0
    for name in sorted(by_host):
        pick = [u for u in by_host[name] if rng.random() < fraction]
        if pick:
            out = await conn.post("/v1/reservations", {"holder": "busy", "gpus": pick, "ttlSeconds": 86400})
            assert out["kind"] == "Reservation", out
            taken += len(pick)
    conn.close()
    return taken


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", default="1,16,64", help="comma-separated client counts")
    ap.add_argument("--cycles", type=int, default=60, help="reserve+release cycles per client")
    ap.add_argument("--profile", default="superpod-h100:sus=1", help="synthetic cluster (graphsvc load)")
    ap.add_argument("--busy", type=float, default=0.0, help="fraction of the GPUs reserved first, at random")
    ap.add_argument("--rounds", type=int, default=1, help="runs per client count, back to back")
    ap.add_argument(
        "--auth", action="store_true", help="tokens, as deployed: the clients are schedulers (default: --insecure-dev)"
    )
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "reservations_server.json"))
    args = ap.parse_args()
    results = []
    with Served(auth=args.auth) as service:
        service.cli("load", args.profile)
        busy = await occupy(service, args.busy) if args.busy > 0 else 0
        await run(service, 2, 3)  # warm-up: plans the statements, fills caches
        for clients in (int(x) for x in args.clients.split(",")):
            for n in range(args.rounds):
                result = {**await run(service, clients, args.cycles), "round": n + 1, "machine": reference_ms()}
                print(json.dumps(result), flush=True)
                results.append(result)
    report = {
        "store": "embedded FalkorDB, appendfsync always",
        "cluster": f"{args.profile} through graphsvc load"
        + (f", {busy} GPUs reserved first at random" if busy else ""),
        "transport": "graphsvc serve (uvicorn) in its own process; clients in another, HTTP/1.1 keep-alive",
        "callers": "scheduler tokens" if args.auth else "--insecure-dev (every caller an operator)",
        "workload": "REST: reserve 1/2/4/8 H100 full mesh (random per cycle), then release",
        "runs": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=1))  # noqa: ASYNC240 - after the measuring


if __name__ == "__main__":
    try:  # the clients share the service's machine: their event loop as lean as the service's
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        asyncio.run(main())
    else:
        uvloop.run(main())
