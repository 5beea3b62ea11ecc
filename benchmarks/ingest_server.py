"""Benchmark: host fact documents/s into the running service, 16 collectors in another process (not a test).

`ingest_throughput.py` sends through the app in-process (its httpx clients share the service's
interpreter); here the service runs as deployed (`benchmarks/served.py`: `graphsvc serve`,
uvicorn, the embedded store with appendfsync always) and 16 collectors in this process each
hold one keep-alive connection and `PUT /v1/hosts/{name}/facts` the same JSON documents
`topo-collector run` sends: a first ingest (every host new), then steady-state rounds (every
host again with a newer `collected_at`). Reports documents/s, p50/p99 (ms), CPU per document of
the service, its store and the collectors (/proc), and store statements per document (/metrics).

    python benchmarks/ingest_server.py                       # superpod-h100:sus=16 (511 hosts), 4 rounds

Writes docs/benchmarks/ingest_server.json (or --out). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from ingest_throughput import COLLECTORS, documents
from machine_speed import reference_ms
from served import Connection, Served, pct

ROOT = Path(__file__).resolve().parents[1]


async def send_all(service: Served, docs: list[tuple[str, bytes]]) -> dict[str, Any]:
    conns = [await Connection.open(service.port) for _ in range(COLLECTORS)]
    queue = list(reversed(docs))
    latencies: list[float] = []

    async def collector(conn: Connection) -> None:
        while queue:
            host, body = queue.pop()
            t = time.perf_counter()
            out = await conn.send("PUT", f"/v1/hosts/{host}/facts", body)
            latencies.append((time.perf_counter() - t) * 1000)
            if not out.get("applied"):
                raise RuntimeError(f"{host}: not applied: {out}")

    before = service.snapshot()
    started = time.perf_counter()
    await asyncio.gather(*(collector(c) for c in conns))
    elapsed = time.perf_counter() - started
    costs = service.costs(before, len(latencies), "doc")
    for conn in conns:
        conn.close()
    return {
        "documents": len(latencies),
        "docs_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(pct(latencies, 0.99), 1),
        **costs,
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="superpod-h100:sus=16")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "ingest_server.json")
    ap.add_argument(
        "--fixed-state",
        action="store_true",
        help="steady rounds change only collected_at (the documents of stops 28-46); by default the GPUs' "
        "temperature, power, utilization and memory in use change each round, as a real collector's do",
    )
    args = ap.parse_args()
    live = not args.fixed_state
    with Served() as service:
        first = await send_all(service, documents(args.profile, 0))
        print(json.dumps({"first_ingest": first}), flush=True)
        rounds = []
        for r in range(1, args.rounds + 1):
            sent = await send_all(service, documents(args.profile, r, live_state=live))
            rounds.append({**sent, "machine": reference_ms()})
            print(json.dumps({"steady_state_round": r, **rounds[-1]}), flush=True)
    total = sum(x["documents"] for x in rounds)
    steady = {
        "documents": total,
        "docs_per_s_by_round": [x["docs_per_s"] for x in rounds],
        "service_cpu_ms_per_doc": round(sum(x["service_cpu_ms_per_doc"] * x["documents"] for x in rounds) / total, 2),
        "client_cpu_ms_per_doc": round(sum(x["client_cpu_ms_per_doc"] * x["documents"] for x in rounds) / total, 3),
        "store_cpu_ms_per_doc": round(sum(x["store_cpu_ms_per_doc"] * x["documents"] for x in rounds) / total, 2),
    }
    report = {
        "profile": args.profile,
        "collectors": COLLECTORS,
        "gpu_state": "changes each round" if live else "fixed (only collected_at changes)",
        "transport": "graphsvc serve (uvicorn) in its own process; collectors in another, HTTP/1.1 keep-alive",
        "first_ingest": first,
        "steady_state": steady,
        "rounds": rounds,
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["steady_state"]))


if __name__ == "__main__":
    asyncio.run(main())
