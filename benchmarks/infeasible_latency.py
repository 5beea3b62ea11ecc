"""Benchmark: infeasible placement requests (the diagnosis) at 8k and 100k GPUs, before/after (not a test).

Loads a DGX H100 SuperPOD of the given size (synthetic, through the real ingest path, 50% of
the GPUs reserved at random, fixed seed: `placement_latency.load`) into a fresh embedded store
and times GraphQL `placementText` requests that nothing fits, asking for the full diagnosis
(`infeasible { constraint message nearestFeasible }`), in-process ASGI (the whole API stack,
no socket). Each request is timed side by side in one run, alternating:

- `before`: the bottleneck visited pair by pair (`select.bottleneck_pairs`), each of the
  diagnosis's searches reading its hosts again, and a model the graph lacks searched for
  before it is named (the engine as it was before issue #15);
- `after`: the grouped bottleneck, the diagnosis reusing the first search's host reads, an
  unknown model answered from the model list without a search.

Writes docs/benchmarks/infeasible.json and prints the Markdown table for docs/benchmarks.md.

    python benchmarks/infeasible_latency.py                    # 8192 100000
    python benchmarks/infeasible_latency.py 8192 --before-runs 3 --runs 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from placement_latency import load, pct

from graphsvc.api.app import create_app, freeze_startup_heap
from graphsvc.placement import engine, explain, select
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = {
    "1000xH100 full mesh": "1000xH100 nvlink=full-mesh",
    "2000xH100 under one leaf": "2000xH100 ib-hops<=1",
    "512xH100 per-host=8": "512xH100 per-host=8",
    "a model not in the graph (8xB200)": "8xB200",
}
QUERY = """query($t: String!) { placementText(text: $t) {
  candidates { score } infeasible { constraint message nearestFeasible } } }"""


@contextmanager
def before() -> Iterator[None]:
    """The engine before issue #15: every pair visited, every diagnosis search reading its hosts."""
    patched: Any = engine  # the module, patched in place for the "before" runs
    original_bottleneck, original_diagnose = patched.bottleneck, patched.diagnose

    async def diagnose_rereading(e: Any, req: Any, loader: Any = None) -> Any:
        return await original_diagnose(e, req)

    async def search_anyway(self: Any, req: Any) -> list[Any]:
        return []

    original_check = engine.PlacementEngine._no_such_model
    patched.bottleneck, patched.diagnose = select.bottleneck_pairs, diagnose_rereading
    patched.PlacementEngine._no_such_model = search_anyway  # an unknown model was searched for first
    try:
        yield
    finally:
        patched.bottleneck, patched.diagnose = original_bottleneck, original_diagnose
        patched.PlacementEngine._no_such_model = original_check
    assert patched.diagnose is explain.diagnose


async def timed(fn: Callable[[], Awaitable[None]], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def cell(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(ms, 0.5), 1), "p99_ms": round(pct(ms, 0.99), 1), "runs": len(ms)}


async def measure(gpus: int, runs: int, before_runs: int) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-infeasible-{gpus}-"))
    try:
        settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=600)
        async with open_store(settings) as gw:
            info = await load(gw, gpus)
            # Hosts never go stale here: loading 100k GPUs on a loaded machine takes longer than the
            # default stale_after_s (300 s), and hosts turning stale mid-run would change the answers.
            app = create_app(settings.model_copy(update={"insecure_dev": True, "stale_after_s": 1e9}), gateway=gw)
            freeze_startup_heap()  # as the server does once started (graphsvc.api.app)
            results: dict[str, Any] = {}
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as client:
                for label, text in REQUESTS.items():
                    answers: list[Any] = []

                    async def ask(text: str = text, answers: list[Any] = answers) -> None:
                        resp = await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})
                        body = resp.json()
                        assert "errors" not in body, body
                        out = body["data"]["placementText"]
                        assert not out["candidates"] and out["infeasible"], out
                        answers.append(out["infeasible"])

                    def gpu_rows(calls: int) -> int:
                        stat = gw.stats.get("placement_host_gpus")
                        return round(stat.rows / calls) if stat else 0

                    await timed(ask, 1)  # warm-up (and the model list's cache)
                    with before():
                        gw.stats.clear()
                        old = await timed(ask, before_runs)
                        rows_before = gpu_rows(before_runs)
                    gw.stats.clear()
                    new = await timed(ask, runs)
                    rows_after = gpu_rows(runs)
                    assert all(a == answers[0] for a in answers), f"{label}: the answer changed"
                    results[label] = {"text": text, "before": {**cell(old), "gpu_rows_read": rows_before},
                                      "after": {**cell(new), "gpu_rows_read": rows_after},
                                      "ratio_p50": round(pct(old, 0.5) / pct(new, 0.5), 1),
                                      "reasons": [r["constraint"] for r in answers[0]]}  # fmt: skip
                    print(f"  {gpus}: {label}: {results[label]}", file=sys.stderr)
            return {**info, "infeasible": results}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def table(report: dict[str, Any]) -> str:
    lines = [
        "| cluster | request | reasons | before p50 / p99 ms (runs) | after p50 / p99 ms (runs) | before / after "
        "| GPU rows read per request, before / after |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        for r in run["infeasible"].values():
            b, a = r["before"], r["after"]
            lines.append(
                f"| {run['gpus']:,} GPUs | `{r['text']}` | {', '.join(r['reasons'])} | {b['p50_ms']:,} / "
                f"{b['p99_ms']:,} ({b['runs']}) | {a['p50_ms']:,} / {a['p99_ms']:,} ({a['runs']}) | {r['ratio_p50']}x "
                f"| {b['gpu_rows_read']:,} / {a['gpu_rows_read']:,} |"
            )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[8192, 100000])
    parser.add_argument("--runs", type=int, default=20, help="timed requests after (default 20)")
    parser.add_argument("--before-runs", type=int, default=3, help="timed requests before (default 3: seconds each)")
    args = parser.parse_args()
    report: dict[str, Any] = {"runs": []}
    for gpus in args.sizes:
        report["runs"].append(await measure(gpus, args.runs, args.before_runs))
    out = ROOT / "docs" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    (out / "infeasible.json").write_text(json.dumps(report, indent=1))
    print(table(report))


if __name__ == "__main__":
    asyncio.run(main())
