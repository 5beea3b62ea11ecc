"""Benchmark: placement latency through GraphQL on SuperPOD clusters of 1k-100k GPUs (not a test).

For each size it loads a DGX H100 SuperPOD (synthetic, through the real ingest path) into
a fresh embedded store, marks 50% of the GPUs reserved at random (fixed seed), then times
GraphQL `placementText` requests (in-process ASGI: the whole API stack, no socket) side by
side with the naive Cypher query that scans every GPU. Writes docs/benchmarks/placement.json
and docs/benchmarks/placement.png.

    python benchmarks/placement_latency.py                 # 1024 8192 32768 100000
    python benchmarks/placement_latency.py 1024 8192       # a quicker run
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from graphsvc.api.app import create_app
from graphsvc.ingest.service import ingest_fabric, ingest_host, recount
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = {
    "single-host: 4xH100 nvlink=full-mesh": "4xH100 nvlink=full-mesh",
    "single-host: 1xH100": "1xH100",
    "multi-host: 32xH100 per-host=4 ib-hops<=1": "32xH100 per-host=4 ib-hops<=1",
}
QUERY = "query($t: String!) { placementText(text: $t) { candidates { score gpus { uuid host { name } } } } }"
RUNS = 60
WARMUP = 5


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def load(gw: Gateway, gpus: int) -> dict[str, Any]:
    started = time.perf_counter()
    cluster = build(f"sized:gpus={gpus}")
    sem = asyncio.Semaphore(8)

    async def one(host: Any) -> None:
        async with sem:
            await ingest_host(gw, host)

    for i in range(0, len(cluster.hosts), 512):
        await asyncio.gather(*(one(h) for h in cluster.hosts[i : i + 512]))
        print(f"  {gpus}: {min(i + 512, len(cluster.hosts))}/{len(cluster.hosts)} hosts", file=sys.stderr)
    await ingest_fabric(gw, cluster.fabric())
    rng = random.Random(42)
    taken = [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.5]
    for i in range(0, len(taken), 4000):
        await gw.write("set_gpu_state", {"uuids": taken[i : i + 4000], "state": "reserved"})
    names = [h.hostname for h in cluster.hosts]
    for i in range(0, len(names), 500):
        await recount(gw, names[i : i + 500])
    return {
        "hosts": len(cluster.hosts),
        "gpus": cluster.gpu_count,
        "reserved": len(taken),
        "load_s": round(time.perf_counter() - started, 1),
    }


async def timed(fn: Any) -> list[float]:
    for _ in range(WARMUP):
        await fn()
    out = []
    for _ in range(RUNS):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def measure(gpus: int) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-{gpus}-"))
    try:
        settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=120)
        async with open_store(settings) as gw:
            info = await load(gw, gpus)
            app = create_app(settings.model_copy(update={"insecure_dev": True}), gateway=gw)
            transport = httpx.ASGITransport(app=app)
            results: dict[str, Any] = {}
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                for label, text in REQUESTS.items():

                    async def ask(text: str = text) -> None:
                        resp = await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})
                        body = resp.json()
                        assert "errors" not in body and body["data"]["placementText"]["candidates"], body

                    ms = await timed(ask)
                    results[label] = {"p50_ms": round(pct(ms, 0.5), 3), "p99_ms": round(pct(ms, 0.99), 3)}
                    print(f"  {gpus}: {label}: {results[label]}", file=sys.stderr)

            async def naive() -> None:
                rows = await gw.read("benchmark_naive_scan", {"model": "h100", "n": 4, "limit": 6})
                assert rows

            ms = await timed(naive)
            results["naive scan (Cypher, every GPU): 4 free H100 on a host"] = {
                "p50_ms": round(pct(ms, 0.5), 3),
                "p99_ms": round(pct(ms, 0.99), 3),
            }
            print(
                f"  {gpus}: naive: {results['naive scan (Cypher, every GPU): 4 free H100 on a host']}", file=sys.stderr
            )
            return {**info, "latency": results}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def plot(report: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["gpus"] for r in report["runs"]]
    fig, ax = plt.subplots(figsize=(8, 5))
    labels = list(report["runs"][0]["latency"])
    for label in labels:
        ax.plot(sizes, [r["latency"][label]["p50_ms"] for r in report["runs"]], marker="o", label=f"{label} (p50)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("GPUs in the cluster (50% reserved at random)")
    ax.set_ylabel("latency, ms (log)")
    ax.set_title("Placement latency through GraphQL vs a naive full scan")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


async def main(sizes: list[int]) -> None:
    report: dict[str, Any] = {"runs_per_request": RUNS, "runs": []}
    for gpus in sizes:
        report["runs"].append(await measure(gpus))
    single = "single-host: 4xH100 nvlink=full-mesh"
    naive = "naive scan (Cypher, every GPU): 4 free H100 on a host"
    by_size = {r["gpus"]: r["latency"] for r in report["runs"]}
    if 8192 in by_size and 100000 in by_size:
        report["p50_100k_over_8k"] = round(by_size[100000][single]["p50_ms"] / by_size[8192][single]["p50_ms"], 2)
        report["naive_over_placement_100k"] = round(
            by_size[100000][naive]["p50_ms"] / by_size[100000][single]["p50_ms"], 1
        )
    out = ROOT / "docs" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    (out / "placement.json").write_text(json.dumps(report, indent=1))
    plot(report, out / "placement.png")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main([int(a) for a in sys.argv[1:]] or [1024, 8192, 32768, 100000]))
