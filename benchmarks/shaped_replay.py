"""Benchmark: shaped (TP/PP/DP) jobs, the service's shaped placement against the baselines (not a test).

Every seed replays the same jobs with every policy, side by side, in one process, through
the service's GraphQL API on the embedded store; the table gives the mean over the seeds and
the min-max spread. Writes docs/benchmarks/shaped_replay.json.

    python benchmarks/shaped_replay.py [--seeds 5] [--jobs 120] [--load 0.8] [--cluster superpod-h100:sus=1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from graphsvc.bench.replay import snapshot
from graphsvc.bench.run import POLICIES, service_for
from graphsvc.bench.shaped import CONFIGS, ShapedReplay, shaped_jobs

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["tp_in_domain_share", "mean_tp_gbps", "mean_dp_gbps", "mean_queue_delay_s", "utilization"]


async def main(args: argparse.Namespace) -> None:
    # Simulated time runs for days while the replay's wall clock runs minutes; the service must
    # not take its hosts for silent collectors (stale_after_s) half way through.
    os.environ.setdefault("GRAPHSVC_STALE_AFTER_S", str(10**9))
    per_policy: dict[str, list[dict[str, Any]]] = {p: [] for p in POLICIES}
    started = time.monotonic()
    async with service_for(args.cluster, None) as client:
        topology, models = await snapshot(client)
        for seed in range(1, args.seeds + 1):
            jobs = shaped_jobs(args.jobs, seed, topology.total, args.load)
            for policy in POLICIES:
                run = await ShapedReplay(client, topology, models).run(policy, jobs)
                per_policy[policy].append({"seed": seed, **run.summary()})
                print(f"  seed {seed} {policy}: {per_policy[policy][-1]}", file=sys.stderr)
    table = {p: _spread(runs) for p, runs in per_policy.items()}
    out = {
        "cluster": args.cluster,
        "gpus": topology.total,
        "jobs": args.jobs,
        "load": args.load,
        "seeds": list(range(1, args.seeds + 1)),
        "configs": [c.__dict__ for c in CONFIGS],
        "summary": table,
        "runs": per_policy,
        "wall_s": round(time.monotonic() - started, 1),
    }
    (ROOT / "docs" / "benchmarks" / "shaped_replay.json").write_text(json.dumps(out, indent=1))
    print(f"\n{args.cluster} ({topology.total} GPUs), {args.jobs} shaped jobs, offered load {args.load}, "
          f"seeds 1-{args.seeds}: mean [min-max]")  # fmt: skip
    print("| policy | TP groups in one NVLink domain | TP bottleneck GB/s | DP bottleneck GB/s | queue delay s "
          "| utilization |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for policy, row in table.items():
        cells = [f"{row[m]['mean']} [{row[m]['min']}-{row[m]['max']}]" for m in METRICS]
        print(f"| {policy} | " + " | ".join(cells) + " |")


def _spread(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for m in METRICS:
        values = [float(r[m]) for r in runs if r[m] is not None]
        out[m] = {
            "mean": round(statistics.fmean(values), 3) if values else float("nan"),
            "min": round(min(values), 3) if values else float("nan"),
            "max": round(max(values), 3) if values else float("nan"),
        }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=120)
    parser.add_argument("--load", type=float, default=0.8)
    parser.add_argument("--cluster", default="superpod-h100:sus=1")
    asyncio.run(main(parser.parse_args()))
