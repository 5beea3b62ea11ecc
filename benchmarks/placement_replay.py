"""Benchmark: trace replay of the service's placement against scheduler baselines (not a test).

One command regenerates every replay table, the verdict table and the plot:

    python benchmarks/placement_replay.py [--alibaba PATH] [--seeds 1,2,3,4,5] [--workers 2]
    python benchmarks/placement_replay.py --render     # tables and plot again from replay.json

Every cell (cluster x trace) runs every policy on the same jobs for each seed, in a fresh
in-process service; cells run in `--workers` processes. The real Alibaba trace is read from
shared/ (never copied). Writes docs/benchmarks/replay.json, replay.png and the part of
docs/benchmarks.md between the replay-tables markers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from graphsvc.bench.report import plot, replace_section, tables, verdicts
from graphsvc.bench.run import REPLAY_POLICIES, aggregate, bench

ROOT = Path(__file__).resolve().parents[1]
ALIBABA = ROOT.parent / "shared" / "data" / "traces" / "alibaba-openb-pods-default.csv"
OUT = ROOT / "docs" / "benchmarks"
DOC = ROOT / "docs" / "benchmarks.md"
ALIBABA_CELL = "{alibaba}"
# (cluster, trace, jobs per seed): sized so that the whole matrix, 5 seeds, runs in about
# half an hour on a loaded 2-core machine (see docs/benchmarks.md for the measured time).
CELLS: list[tuple[str, str, int]] = [
    ("superpod-h100:sus=1", "generated", 60),
    ("superpod-h100:sus=1", "shaped:load=0.7", 300),
    ("superpod-h100:sus=1", "shaped:load=0.9", 300),
    ("superpod-h100:sus=1", ALIBABA_CELL, 150),
    ("nvl72:racks=2", "shaped:load=0.8", 300),
    ("demo:sus=1", "shaped:load=0.8", 200),
    ("demo:sus=1", ALIBABA_CELL, 150),
]


def _cell(args: tuple[str, str, int, list[int]]) -> dict[str, Any]:
    cluster, trace, jobs, seeds = args
    started = time.perf_counter()
    report = asyncio.run(bench(cluster, trace, REPLAY_POLICIES, jobs, seeds))
    report["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"done {cluster} / {trace} in {report['wall_s']} s", file=sys.stderr)
    return report


def render(runs: list[dict[str, Any]]) -> None:
    for run in runs:  # the aggregate is always recomputed from the per-seed results
        run.update(aggregate(run["per_seed"]))
    (OUT / "replay.json").write_text(json.dumps(runs, indent=1))
    plot(runs, OUT / "replay.png")
    body = tables(runs) + "\n\n##### Against the Kueue-like baseline, paired by seed\n\n" + verdicts(runs)
    body += "\n\n![replay: means with min-max whiskers](benchmarks/replay.png)\n"
    DOC.write_text(replace_section(DOC.read_text(), body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alibaba", type=Path, default=ALIBABA, help="the Alibaba openb pods CSV (read, not copied)")
    parser.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds (at least 5 for the docs)")
    parser.add_argument("--workers", type=int, default=2, help="cells run in parallel (default 2)")
    parser.add_argument("--render", action="store_true", help="only re-render tables and plot from replay.json")
    args = parser.parse_args()
    if args.render:
        render(json.loads((OUT / "replay.json").read_text()))
        return
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    cells = []
    for cluster, trace, jobs in CELLS:
        if trace == ALIBABA_CELL:
            if not args.alibaba.exists():
                print(f"skipping {cluster} / Alibaba: {args.alibaba} not found", file=sys.stderr)
                continue
            trace = str(args.alibaba)
        cells.append((cluster, trace, jobs, seeds))
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        runs = list(pool.map(_cell, cells))
    print(f"all cells in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    render(runs)


if __name__ == "__main__":
    main()
