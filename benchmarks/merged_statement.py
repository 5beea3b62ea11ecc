"""Benchmark: a moment's reserves and releases in one statement against two (not a test).

A batch of single-host reserves and a batch of releases go to a store that runs writes one at a
time as one statement (`reservations/reserve_release_batch`, since stop 73) where they went as two
(`reservations/reserve_in_host_batch` and `reservations/release_batch`): stop 65 measured ~2.4 ms
of the store's CPU fixed per such pair (docs/benchmarks.md, "Stop 65"). This sends both forms
(their scan forms, as on one scalable unit) alternately on the embedded store with its production
durability (appendfsync always), each for `--pairs` reserve-and-release pairs a set, the releases
freeing the previous pair's reservations, and reports the store's CPU (redis INFO) and the wall
time per pair.

    python benchmarks/merged_statement.py --batch 6 --pairs 300 --sets 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reservation_throughput import batch_reserve_params, store_cpu_s

from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.load import load_cluster

RESERVE = "reservations/reserve_in_host_batch_scan"
RELEASE = "reservations/release_batch"
BOTH = "reservations/reserve_release_batch_scan"


async def one_set(gw: Gateway, form: str, batch: int, pairs: int, tag: str) -> dict[str, Any]:
    rows = await gw.read("placement_gpu_models", {})
    models = [str(r["model"]) for r in rows if r.get("model") and "H100" in str(r["model"])]
    rng = random.Random(1)
    held: list[str] = []
    made = 0
    cpu0, started = await store_cpu_s(gw) or 0.0, time.perf_counter()
    for k in range(pairs):
        params = batch_reserve_params(rng, models, batch, f"{tag}-{k}")
        if form == "two":
            out = await gw.write(RESERVE, params)
            await gw.write(RELEASE, {"ids": held, "now": time.time(), "state": "released"})
        else:
            out = await gw.write(BOTH, params | {"ids": held, "state": "released"})
            if sorted(out[0]["released_ids"]) != sorted(held):
                raise SystemExit(f"the one statement released {out[0]['released_ids']}, not {held}")
        held = [str(i) for i in out[0]["ids"]] if out else []
        made += len(held)
    wall, cpu = time.perf_counter() - started, (await store_cpu_s(gw) or 0.0) - cpu0
    await gw.write(RELEASE, {"ids": held, "now": time.time(), "state": "released"})
    return {"form": form, "pairs": pairs, "reserved": made, "store_cpu_ms_per_pair": round(1000 * cpu / pairs, 2),
            "wall_ms_per_pair": round(1000 * wall / pairs, 2)}  # fmt: skip


def _write(path: str, text: str) -> None:
    Path(path).write_text(text)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=6, help="reserves per batch (the service's ~5-6 at 16 clients)")
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--sets", type=int, default=3, help="two / one alternations")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-merged-"))
    results: list[dict[str, Any]] = []
    try:
        async with open_store(Settings(data_dir=data, appendfsync="always", insecure_dev=True)) as gw:
            await load_cluster(gw, "superpod-h100:sus=1")
            await one_set(gw, "two", args.batch, 20, "warm2")  # plans both forms
            await one_set(gw, "one", args.batch, 20, "warm1")
            for s in range(args.sets):
                for form in ("two", "one") if s % 2 == 0 else ("one", "two"):
                    result = await one_set(gw, form, args.batch, args.pairs, f"{form}{s}")
                    print(json.dumps(result), flush=True)
                    results.append(result)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    for form in ("two", "one"):
        cpu = [r["store_cpu_ms_per_pair"] for r in results if r["form"] == form]
        wall = [r["wall_ms_per_pair"] for r in results if r["form"] == form]
        print(f"{form}: store CPU ms/pair median {statistics.median(cpu)}, wall median {statistics.median(wall)}")
    if args.out:
        _write(args.out, json.dumps({"batch": args.batch, "runs": results}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
