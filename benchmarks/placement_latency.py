"""Benchmark: placement latency through GraphQL on SuperPOD clusters of 1k-100k GPUs (not a test).

For each size it loads a DGX H100 SuperPOD (synthetic, through the real ingest path) into
a fresh store, marks 50% of the GPUs reserved at random (fixed seed; every 32nd host is left
idle, so whole-host requests fit at every size), then times GraphQL
`placementText` requests and the same requests through the REST fast path `POST /v1/place`
(what a scheduler calling per job uses; `rest_p50_ms`), both in-process ASGI (the whole API
stack, no socket), side by side with the naive Cypher query that scans every GPU, and counts
the store statements each request costs (the gateway's per-query statistics). Writes docs/benchmarks/placement.json (or
placement-neo4j.json) and docs/benchmarks/placement.png.

    python benchmarks/placement_latency.py                 # 1024 8192 32768 100000, embedded FalkorDB
    python benchmarks/placement_latency.py 8192 100000     # the sizes the goals name
    python benchmarks/placement_latency.py --store neo4j 8192   # the local Neo4j 5 server (tools/neo4j-local)
    python benchmarks/placement_latency.py --keep /tmp/clusters --out /tmp/a.json 100000
        # the embedded store kept in /tmp/clusters/100000: loaded by the first run, only read by
        # the next (placement does not write), so two trees' code can take turns on one cluster
        # (PYTHONPATH=<tree> python <this script>; trees with the same graph migrations). The
        # loading run measures a store just loaded, the later ones one reopened ("kept": true):
        # load once before the runs you compare. --out: the JSON there, no plot
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
from typing import Any, cast

import httpx

from graphsvc.api.app import create_app, freeze_startup_heap
from graphsvc.ingest.service import ingest_fabric, ingest_host, recount
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = {
    "single-host: 8xH100 nvlink=full-mesh": "8xH100 nvlink=full-mesh",
    "single-host: 4xH100 nvlink=full-mesh": "4xH100 nvlink=full-mesh",
    "single-host: 1xH100": "1xH100",
    "multi-host: 32xH100 ib-hops<=1": "32xH100 ib-hops<=1",
    "multi-host: 32xH100 per-host=4 ib-hops<=1": "32xH100 per-host=4 ib-hops<=1",
    "infeasible: 9xH100 nvlink=full-mesh": "9xH100 nvlink=full-mesh",
}
QUERY = """query($t: String!) { placementText(text: $t) {
  candidates { score gpus { uuid host { name } } } infeasible { constraint } } }"""
RUNS = 60
WHOLE_EVERY = 32
INFEASIBLE_RUNS = 20  # the diagnosis runs many searches: fewer runs keep the benchmark short
WARMUP = 5
# The baseline: every GPU scanned, grouped by host, hosts with n free H100s (n as the request's share).
NAIVE = {"naive scan: 8 free H100 on a host": 8, "naive scan: 4 free H100 on a host": 4}


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
    # Half the GPUs taken at random, but every WHOLE_EVERY-th host left idle (as a scheduler's
    # cluster has some), so an 8-GPU full-mesh request has a few fits at every size.
    taken = [g.uuid for i, h in enumerate(cluster.hosts) for g in h.gpus if i % WHOLE_EVERY and rng.random() < 0.5]
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


async def timed(fn: Any, runs: int = RUNS) -> list[float]:
    for _ in range(WARMUP):
        await fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def statements(gw: Gateway) -> int:
    return sum(stat.calls for stat in gw.stats.values())


def loaded(built: Path | None) -> dict[str, Any] | None:
    """The load summary a kept store's first run wrote (--keep), or None: load the cluster."""
    if built is None or not built.exists():
        return None
    return cast(dict[str, Any], json.loads(built.read_text()))


async def measure_on(gw: Gateway, settings: Settings, gpus: int, built: Path | None = None) -> dict[str, Any]:
    """`built`: where a kept store's load summary lies (--keep): the cluster is loaded once, then
    read by every later run (placement only reads), e.g. by two trees' code in turn."""
    info = loaded(built)
    if info is None:
        info = await load(gw, gpus)
        if built is not None:
            built.write_text(json.dumps(info))  # noqa: ASYNC240 (a benchmark, nothing else waits)
    else:  # loaded by an earlier run: load_s is that run's; this one reopened the store
        info["kept"] = True
    # Hosts never go stale here: loading 100k GPUs takes longer than the default stale_after_s
    # (300 s), and the hosts loaded first would then be skipped as silent (their counters still
    # count them), which measures a cluster a third of whose hosts are down, not placement.
    app = create_app(settings.model_copy(update={"insecure_dev": True, "stale_after_s": 1e9}), gateway=gw)
    freeze_startup_heap()  # as the server does once started (graphsvc.api.app)
    transport = httpx.ASGITransport(app=app)
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=300) as client:
        for label, text in REQUESTS.items():
            infeasible = label.startswith("infeasible")

            async def ask(text: str = text, infeasible: bool = infeasible) -> None:
                resp = await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})
                body = resp.json()
                assert "errors" not in body, body
                answer = body["data"]["placementText"]
                assert bool(answer["candidates"]) != infeasible, (text, answer)

            async def ask_rest(text: str = text, infeasible: bool = infeasible) -> None:
                answer = (await client.post("/v1/place", json={"request": text})).json()
                assert bool(answer["candidates"]) != infeasible, (text, answer)

            gw.stats.clear()
            await ask()
            trips = statements(gw)
            runs = INFEASIBLE_RUNS if infeasible else RUNS
            ms = await timed(ask, runs)
            rest = await timed(ask_rest, runs)
            results[label] = {
                "p50_ms": round(pct(ms, 0.5), 3),
                "p99_ms": round(pct(ms, 0.99), 3),
                "statements": trips,
                "rest_p50_ms": round(pct(rest, 0.5), 3),
                "rest_p99_ms": round(pct(rest, 0.99), 3),
            }
            print(f"  {gpus}: {label}: {results[label]}", file=sys.stderr)

    for label, n in NAIVE.items():

        async def naive(n: int = n) -> None:
            rows = await gw.read("benchmark_naive_scan", {"model": "h100", "n": n, "limit": 6})
            assert rows

        ms = await timed(naive)
        results[label] = {"p50_ms": round(pct(ms, 0.5), 3), "p99_ms": round(pct(ms, 0.99), 3), "statements": 1}
        print(f"  {gpus}: {label}: {results[label]}", file=sys.stderr)
    return {**info, "latency": results}


async def measure(gpus: int, store: str, keep: Path | None = None) -> dict[str, Any]:
    if keep is not None and store == "falkordb":
        data = keep / str(gpus)
        data.mkdir(parents=True, exist_ok=True)
        settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300)
        async with open_store(settings) as gw:
            return await measure_on(gw, settings, gpus, built=data / "loaded.json")
    data = Path(tempfile.mkdtemp(prefix=f"bench-{gpus}-"))
    try:
        if store == "neo4j":
            from graphsvc.store.neo4j_local import LocalNeo4j

            neo = LocalNeo4j(data / "neo4j")
            neo.start()
            try:
                settings = Settings(
                    store=neo.uri, neo4j_password=neo.password, data_dir=data / "unused", query_timeout_s=300
                )
                async with open_store(settings) as gw:
                    return await measure_on(gw, settings, gpus)
            finally:
                neo.stop()
        settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300)
        async with open_store(settings) as gw:
            return await measure_on(gw, settings, gpus)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def ratios(report: dict[str, Any]) -> dict[str, Any]:
    """Per request: p50 at 100k over p50 at 8k, and the naive scan's p50 over it (8k and 100k)."""
    by_size = {r["gpus"]: r["latency"] for r in report["runs"]}
    out: dict[str, Any] = {}
    for label in REQUESTS:
        share = 8 if "8xH100" in label or "32xH100 ib-hops" in label else 4
        naive = f"naive scan: {share} free H100 on a host"
        row: dict[str, Any] = {"naive": naive}
        if 8192 in by_size and 100000 in by_size:
            row["p50_100k_over_8k"] = round(by_size[100000][label]["p50_ms"] / by_size[8192][label]["p50_ms"], 2)
        for size in (8192, 100000):
            if size in by_size:
                row[f"naive_over_placement_{size}"] = round(
                    by_size[size][naive]["p50_ms"] / by_size[size][label]["p50_ms"], 1
                )
                if "rest_p50_ms" in by_size[size][label]:
                    row[f"naive_over_rest_placement_{size}"] = round(
                        by_size[size][naive]["p50_ms"] / by_size[size][label]["rest_p50_ms"], 1
                    )
        out[label] = row
    return out


def plot(report: dict[str, Any], out: Path) -> None:
    try:
        import matplotlib
    except ImportError:  # the [bench] extra is not installed: the numbers are in the JSON
        print("matplotlib not installed: no plot", file=sys.stderr)
        return

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


async def main(sizes: list[int], store: str, keep: Path | None = None, out: Path | None = None) -> None:
    report: dict[str, Any] = {"store": store, "runs_per_request": RUNS, "runs": []}
    for gpus in sizes:
        report["runs"].append(await measure(gpus, store, keep))
    report["ratios"] = ratios(report)
    folder = ROOT / "docs" / "benchmarks"
    folder.mkdir(parents=True, exist_ok=True)
    name = "placement.json" if store == "falkordb" else f"placement-{store}.json"
    (out or folder / name).write_text(json.dumps(report, indent=1))
    if store == "falkordb" and out is None:
        plot(report, folder / "placement.png")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    # As in reservation_throughput.py: httpx's in-process ASGI transport imports sniffio on every
    # request to check for trio; without sniffio installed that failed import searches sys.path
    # each time (~0.5 ms of this client's CPU per request on a loaded machine, counted in every
    # request's latency before stop 37). A None entry fails it at once; the service is unchanged.
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]
    args = sys.argv[1:]
    options: dict[str, str] = {}
    for flag in ("--store", "--keep", "--out"):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                sys.exit(f"{flag} needs a value")
            options[flag] = args[i + 1]
            del args[i : i + 2]
    if "--keep" in options and options.get("--store", "falkordb") != "falkordb":
        sys.exit("--keep keeps the embedded store only (a Neo4j run starts its own server)")
    keep = Path(options["--keep"]) if "--keep" in options else None
    out = Path(options["--out"]) if "--out" in options else None
    sizes = [int(a) for a in args] or [1024, 8192, 32768, 100000]
    asyncio.run(main(sizes, options.get("--store", "falkordb"), keep, out))
