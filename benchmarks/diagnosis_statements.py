"""Store time per statement of one infeasible request's diagnosis, warm (docs/benchmarks.md,
Infeasible placements): which statements a diagnosis runs, how often, and where its time goes.

    python benchmarks/diagnosis_statements.py "251xH100 rail-aligned" [--gpus 8192] [--runs 4]

The embedded store on a synthetic cluster in a temporary directory; the first two runs warm the
plans and caches and are not printed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import shutil
import tempfile
import time
from pathlib import Path

from graphsvc.placement.request import parse_request
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.load import load_cluster

WARM_UP = 2


async def main(text: str, gpus: int, runs: int) -> None:
    data = Path(tempfile.mkdtemp(prefix="diag-"))
    settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300, stale_after_s=1e9)
    try:
        async with open_store(settings) as gw:
            await load_cluster(gw, f"sized:gpus={gpus}")
            engine = Services(gw, settings).reservations.engine
            for i in range(WARM_UP + runs):
                before = {name: copy.copy(stat) for name, stat in gw.stats.items()}
                started = time.perf_counter()
                await engine.place(parse_request(text).validated(), explain_infeasible=True)
                wall = time.perf_counter() - started
                if i < WARM_UP:
                    continue
                print(f"run {i} wall {wall * 1000:.1f} ms")
                for name, stat in gw.stats.items():
                    old = before.get(name)
                    calls = stat.calls - (old.calls if old else 0)
                    if calls:
                        spent = stat.total_s - (old.total_s if old else 0.0)
                        print(f"  {name:45s} {calls:3d} {spent * 1000:7.1f} ms")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("request")
    parser.add_argument("--gpus", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.request, args.gpus, args.runs))
