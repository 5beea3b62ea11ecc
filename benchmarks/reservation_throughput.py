"""Benchmark: reservations per second and latency with concurrent clients (not a test).

Loads one DGX H100 SuperPOD scalable unit (31 hosts, 248 GPUs) into a fresh store with its
production durability (FalkorDB appendfsync always; Neo4j flushes its log on commit), then N
clients each loop: reserve (a placement request: 1, 2, 4 or 8 H100 full mesh) and release,
through GraphQL or the REST fast path, in-process. Reports reservations/s, reserve p50/p99,
store round trips per cycle and reserve statements per reservation (from the gateway's
per-query statistics). The mutation rate limit and the GraphQL cost budget are opened for
the benchmark (they are per token, and every client here is the one dev principal).

    python benchmarks/reservation_throughput.py --clients 1,16,64 --cycles 20 --api graphql,rest
    python benchmarks/reservation_throughput.py --store neo4j --clients 16 --cycles 10

Writes docs/benchmarks/reservations.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from graphsvc.api.app import create_app, freeze_startup_heap
from graphsvc.reservations.fastpath import candidate_read
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.load import load_cluster

ROOT = Path(__file__).resolve().parents[1]
RESERVE = """mutation($input: ReserveInput!) { reserve(input: $input) { __typename ... on Reservation { id } } }"""
RELEASE = """mutation($id: String!) { release(id: $id) { __typename } }"""
RESERVE_STATEMENTS = (
    "reserve_gpus", "reserve_in_host", "reserve_in_host_scan", "reserve_in_host_batch", "reserve_in_host_batch_scan",
    "preempt_and_reserve",
)  # fmt: skip


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def calls(gw: Gateway) -> dict[str, int]:
    return {name: stat.calls for name, stat in gw.stats.items()}


async def store_cpu_s(gw: Gateway) -> float | None:
    """The embedded store's CPU seconds so far (redis INFO cpu), None for Neo4j."""
    if gw.kind == "neo4j":
        return None
    info = await gw.backend._database().connection.info("cpu")  # type: ignore[attr-defined]
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def cycle(client: httpx.AsyncClient, api: str, holder: str, gpus: int, key: str | None) -> tuple[str, float]:
    """One reserve (timed) and, if it got GPUs, its release."""
    t = time.perf_counter()
    if api == "rest":
        body = {"holder": holder, "ttlSeconds": 600, "request": f"{gpus}xH100 nvlink=full-mesh", "idempotencyKey": key}
        out = (await client.post("/v1/reservations", json=body)).json()
        kind, rid = out["kind"], out.get("id")
    else:
        request = {"gpus": gpus, "model": "H100", "nvlink": "FULL_MESH"}
        variables = {"input": {"holder": holder, "ttlSeconds": 600, "request": request, "idempotencyKey": key}}
        out = (await client.post("/graphql", json={"query": RESERVE, "variables": variables})).json()
        res = out["data"]["reserve"]
        kind, rid = res["__typename"], res.get("id")
    ms = (time.perf_counter() - t) * 1000
    if kind == "Reservation":
        if api == "rest":
            await client.post(f"/v1/reservations/{rid}/release")
        else:
            await client.post("/graphql", json={"query": RELEASE, "variables": {"id": rid}})
    return kind, ms


async def run(
    client: httpx.AsyncClient, gw: Gateway, api: str, clients: int, cycles: int, keys: bool = False
) -> dict[str, Any]:
    latencies: list[float] = []
    outcomes: dict[str, int] = {}
    before = calls(gw)
    store_before = await store_cpu_s(gw)
    cpu_before = time.process_time()

    async def worker(n: int) -> None:
        rng = random.Random(n)
        for _ in range(cycles):
            key = f"k{uuid.uuid4().hex}" if keys else None  # a scheduler's per-job key, when asked
            kind, ms = await cycle(client, api, f"c{n}", rng.choice([1, 2, 4, 8]), key)
            latencies.append(ms)
            outcomes[kind] = outcomes.get(kind, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(clients)))
    elapsed = time.perf_counter() - started
    service_cpu = time.process_time() - cpu_before
    store_after = await store_cpu_s(gw)
    after = calls(gw)
    delta = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
    made = outcomes.get("Reservation", 0)
    reserve_statements = sum(v for k, v in delta.items() if k.split("/")[-1] in RESERVE_STATEMENTS)
    return {
        "api": api,
        "clients": clients,
        "idempotency_keys": keys,
        "attempts": len(latencies),
        "outcomes": outcomes,
        "reservations_per_s": round(made / elapsed, 1),
        "reserve_p50_ms": round(statistics.median(latencies), 1),
        "reserve_p99_ms": round(pct(latencies, 0.99), 1),
        "store_calls_per_cycle": round(sum(delta.values()) / max(1, len(latencies)), 2),
        "reserve_statements_per_reservation": round(reserve_statements / max(1, made), 2),
        "service_cpu_ms_per_cycle": round(service_cpu * 1000 / max(1, len(latencies)), 2),
        "store_cpu_ms_per_cycle": None
        if store_before is None or store_after is None
        else round((store_after - store_before) * 1000 / max(1, len(latencies)), 2),
        "statements": delta,
    }


def batch_reserve_params(rng: random.Random, models: list[str], batch: int, tag: str) -> dict[str, Any]:
    """reserve_in_host_batch's parameters for `batch` requests of 1, 2, 4 or 8 H100 full mesh
    (random), ids `tag-0`, `tag-1`, ..."""
    requests: list[dict[str, Any]] = []
    for i in range(batch):
        n = rng.choice([1, 2, 4, 8])
        rid = f"{tag}-{i}"
        props = {"id": rid, "holder": "raw", "state": "active", "created_at": 0.0, "expires_at": 1e12,
                 "gpu_count": n, "idempotency_key": rid}  # fmt: skip
        requests.append({"n": n, "link": 2, "props": props})
    return {"requests": requests, "sizes": sorted({r["n"] for r in requests}), "models": models, "model": "h100",
            "exclude": [], "stale_before": -1e18, "scan": min(64, batch + 8), "now": time.time()}  # fmt: skip


async def raw(gw: Gateway, batch: int, rounds: int) -> dict[str, Any]:
    """The ceiling: the two batch statements straight through the gateway (no service, no HTTP)."""
    rows = await gw.read("placement_gpu_models", {})
    models = [str(r["model"]) for r in rows if r.get("model") and "H100" in str(r["model"])]
    hosts = int((await gw.read("reservations/host_count", {}))[0]["hosts"])
    statement = candidate_read("reservations/reserve_in_host_batch", hosts)  # as the service picks
    rng = random.Random(1)
    made = 0
    ms: list[float] = []
    started = time.perf_counter()
    for k in range(rounds):
        params = batch_reserve_params(rng, models, batch, f"raw{batch}-{k}")
        t = time.perf_counter()
        out = await gw.write(statement, params)
        ids = list(out[0]["ids"]) if out else []
        await gw.write("reservations/release_batch", {"ids": ids, "now": time.time(), "state": "released"})
        ms.append((time.perf_counter() - t) * 1000)
        made += len(ids)
    elapsed = time.perf_counter() - started
    return {"api": "raw statements", "batch": batch, "rounds": rounds, "reservations": made,
            "reservations_per_s": round(made / elapsed, 1), "batch_cycle_p50_ms": round(statistics.median(ms), 1),
            "batch_cycle_p99_ms": round(pct(ms, 0.99), 1)}  # fmt: skip


def _write(path: str, text: str) -> None:
    Path(path).write_text(text)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default="falkordb", choices=["falkordb", "neo4j"])
    ap.add_argument("--clients", default="1,16,64", help="comma-separated client counts")
    ap.add_argument("--cycles", type=int, default=20, help="reserve+release cycles per client")
    ap.add_argument("--api", default="graphql,rest", help="graphql, rest or both")
    ap.add_argument("--raw", default="1,16", help="batch sizes for the raw-statement ceiling ('' skips it)")
    ap.add_argument("--keys", action="store_true", help="send an idempotency key with each reserve")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "reservations.json"))
    args = ap.parse_args()
    # httpx's in-process ASGI transport imports sniffio on every request to check for trio; without
    # sniffio installed that failed import searches sys.path each time (~0.25 ms of the client's CPU
    # per request, in this same process). A None entry fails it at once; the service is unchanged.
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]
    data = Path(tempfile.mkdtemp(prefix="bench-rsv-"))
    local = None
    try:
        limits: dict[str, Any] = {"appendfsync": "always", "insecure_dev": True, "mutation_rate_per_minute": 1e9,
                                  "mutation_burst": 1_000_000, "graphql_cost_per_minute": 1e12,
                                  "graphql_cost_burst": 10**9, "query_timeout_s": 120}  # fmt: skip
        settings = Settings(data_dir=data, **limits)
        if args.store == "neo4j":
            from graphsvc.store.neo4j_local import LocalNeo4j

            local = LocalNeo4j(data / "neo4j")
            local.start()
            settings = Settings(data_dir=data / "unused", store=local.uri, neo4j_password=local.password, **limits)
        results: list[dict[str, Any]] = []
        async with open_store(settings) as gw:
            await load_cluster(gw, "superpod-h100:sus=1")
            app = create_app(settings, gateway=gw)
            freeze_startup_heap()  # as the server does once started (graphsvc.api.app)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b", timeout=120) as c:
                await run(c, gw, "graphql", 2, 3)  # warm-up: plans the statements, fills caches
                for size in (int(x) for x in args.raw.split(",") if x):
                    ceiling = await raw(gw, size, max(2, args.cycles * 16 // size))
                    print(json.dumps(ceiling), flush=True)
                    results.append(ceiling)
                for api in (a for a in args.api.split(",") if a):
                    for n in (int(x) for x in args.clients.split(",")):
                        result = await run(c, gw, api, n, args.cycles, args.keys)
                        print(json.dumps({k: v for k, v in result.items() if k != "statements"}), flush=True)
                        results.append(result)
        report = {
            "store": args.store,
            "cluster": "1 DGX H100 SuperPOD SU: 31 hosts, 248 GPUs",
            "durability": "production (FalkorDB appendfsync always; Neo4j log flushed on commit)",
            "workload": "reserve 1/2/4/8 H100 full mesh (random per cycle), then release",
            "runs": results,
        }
        _write(args.out, json.dumps(report, indent=1))
    finally:
        if local is not None:
            local.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
