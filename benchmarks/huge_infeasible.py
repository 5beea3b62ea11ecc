"""Benchmark: huge infeasible requests and their diagnosis, in process (not a test).

A probe at stop 58 sent `4044xH100 rail-aligned` to a service holding 4,096 idle GPUs: ~20-40 s
of the service's CPU, the diagnosis searching ~20 times for the largest count that fits (8). This
loads `sized:gpus=N` into a fresh embedded store and times `engine.place` for each request once
without the diagnosis (what a reserve pays) and `--repeat` times (default 2) with it, with the
store statements it ran and its infeasible reasons. Besides wall seconds it reports the CPU
seconds this process spent (`cpu`) and the embedded store's redis-server spent (`store_cpu`,
from /proc, in clock ticks of 10 ms: sum several runs): on a machine shared with other work the
wall seconds say more about the load than about the code.

    python benchmarks/huge_infeasible.py --gpus 4096 "4044xH100 rail-aligned" "1000xH100 rail-aligned"

Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from machine_speed import reference_ms

from graphsvc.placement.request import parse_request
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.load import load_cluster


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's child processes (the embedded store's
    redis-server), as /proc counts them; 0.0 where there is no /proc."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                for pid in f.read().split():
                    with open(f"/proc/{pid}/stat") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])  # utime, stime
    except OSError:
        return 0.0
    return total / os.sysconf("SC_CLK_TCK")


async def measure(data: Path, gpus: int, texts: list[str], repeat: int = 2) -> list[dict[str, Any]]:
    settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300, stale_after_s=1e9)
    async with open_store(settings) as gw:
        await load_cluster(gw, f"sized:gpus={gpus}")
        engine = Services(gw, settings).reservations.engine
        out = []
        for text in texts:
            for explain in (False, *[True] * repeat):
                before = sum(stat.calls for stat in gw.stats.values())
                store_before, cpu_before = _children_cpu(), time.process_time()
                started = time.perf_counter()
                result = await engine.place(parse_request(text).validated(), explain_infeasible=explain)
                seconds = time.perf_counter() - started
                out.append(
                    {
                        "request": text,
                        "diagnosis": explain,
                        "seconds": round(seconds, 3),
                        "cpu": round(time.process_time() - cpu_before, 3),
                        "store_cpu": round(_children_cpu() - store_before, 2),
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
    parser.add_argument("--repeat", type=int, default=2, help="runs with the diagnosis per request")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-huge-"))
    try:
        runs = asyncio.run(measure(data, args.gpus, args.requests, args.repeat))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps({"gpus": args.gpus, "machine": reference_ms(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
