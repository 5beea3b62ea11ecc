"""Elastic, checkpointing jobs replayed against checkpoint-aware and priority-only preemption.

    python benchmarks/elastic_replay.py [--racks 4] [--hours 48] [--seed 18]

One synthetic trace (graphsvc/bench/elastic.py documents the model), replayed once per policy
on a fresh embedded store holding `nvl72:racks=N`; prints a JSON line per policy and the
markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from graphsvc.bench.elastic import TraceParams, make_trace, replay
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.synthetic.load import load_cluster


async def one(policy: str, racks: int, params: TraceParams) -> dict[str, object]:
    data = Path(tempfile.mkdtemp(prefix="elastic-replay-"))
    try:
        async with open_store(Settings(data_dir=data, appendfsync="no")) as gw:
            await load_cluster(gw, f"nvl72:racks={racks}")
            result = await replay(gw, make_trace(params), policy)
            return result.as_dict()
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--hours", type=float, default=48.0)
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args()
    params = TraceParams(hours=args.hours, seed=args.seed)
    rows = [await one(policy, args.racks, params) for policy in ("checkpoint", "priority")]
    for r in rows:
        print(json.dumps(r))
    print()
    print("| run | urgent placed | preemptions | victims | lost GPU-hours | paired plans: checkpoint / priority "
          "(GPU-hours, n) | resizes done / asked | layout kept (all / grows) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['policy']} | {r['urgent_placed']} | {r['preemptions']} | {r['victims']} | "
              f"{r['lost_gpu_hours']} | {r['paired_lost_checkpoint']} / {r['paired_lost_priority']} "
              f"({r['paired_plans']}) | {r['resizes_done']} / {r['resizes']} | "
              f"{r['layout_kept_share']:.0%} / {r['grow_layout_kept_share']:.0%} |")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
