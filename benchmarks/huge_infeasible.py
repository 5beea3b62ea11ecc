"""Benchmark: huge infeasible requests and their diagnosis, in process (not a test).

A probe at stop 58 sent `4044xH100 rail-aligned` to a service holding 4,096 idle GPUs: ~20-40 s
of the service's CPU, the diagnosis searching ~20 times for the largest count that fits (8). This
loads `sized:gpus=N` into a fresh embedded store and times `engine.place` for each request once
without the diagnosis (what a reserve pays) and twice with it, with the store statements it ran
and its infeasible reasons.

    python benchmarks/huge_infeasible.py --gpus 4096 "4044xH100 rail-aligned" "1000xH100 rail-aligned"

Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from graphsvc.placement.request import parse_request
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.load import load_cluster


async def measure(data: Path, gpus: int, texts: list[str]) -> list[dict[str, Any]]:
    settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300, stale_after_s=1e9)
    async with open_store(settings) as gw:
        await load_cluster(gw, f"sized:gpus={gpus}")
        engine = Services(gw, settings).reservations.engine
        out = []
        for text in texts:
            for explain in (False, True, True):
                before = sum(stat.calls for stat in gw.stats.values())
                started = time.perf_counter()
                result = await engine.place(parse_request(text).validated(), explain_infeasible=explain)
                out.append(
                    {
                        "request": text,
                        "diagnosis": explain,
                        "seconds": round(time.perf_counter() - started, 2),
                        "statements": sum(stat.calls for stat in gw.stats.values()) - before,
                        "candidates": len(result.candidates),
                        "infeasible": [[r.constraint, r.message, r.nearest_feasible] for r in result.infeasible],
                    }
                )
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("requests", nargs="+")
    parser.add_argument("--gpus", type=int, default=4096)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-huge-"))
    try:
        runs = asyncio.run(measure(data, args.gpus, args.requests))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps({"gpus": args.gpus, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
