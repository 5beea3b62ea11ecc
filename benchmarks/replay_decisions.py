"""Benchmark: the replay's decisions per second, service against the baselines, before/after (not a test).

The placement replay (`graphsvc/bench/replay.py`) on a few cells, one seed at a time, on one
loaded in-process service; the service policy is run four ways side by side on the same jobs:

- in process (the engine and reservation service, no transport), `before` and `after`;
- over GraphQL (the whole API stack through in-process ASGI, as `--server` drives a running
  service), `before` (the query selects `infeasible`, so every failed strict attempt pays the
  diagnosis, as the GraphQL driver did) and `after` (candidates only: no diagnosis);

`before` is the engine of `infeasible_latency.before()` (every pair visited, the diagnosis
re-reading hosts). The baselines (first-fit, slurm-tree, kueue-bestfit) decide in memory on
the replay's own picture of the cluster. Every variant of a seed must place the same jobs on
the same GPUs (checked). Writes docs/benchmarks/replay_decisions.json and prints the table.

    python benchmarks/replay_decisions.py                        # 3 cells x seeds 1,2
    python benchmarks/replay_decisions.py --seeds 1 --jobs 100   # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from infeasible_latency import before

from graphsvc.bench.driver import InProcess, OverGraphQL
from graphsvc.bench.replay import Replay, snapshot
from graphsvc.bench.run import driver_for, make_jobs
from graphsvc.client import PLACE

ROOT = Path(__file__).resolve().parents[1]
CELLS = [
    ("superpod-h100:sus=1", "shaped:load=0.9"),
    ("nvl72:racks=2", "shaped:load=0.8"),
    ("demo:sus=1", "shaped:load=0.8"),
]
BASELINES = ["first-fit", "slurm-tree", "kueue-bestfit"]
VARIANTS = ["in-process before", "in-process after", "GraphQL before", "GraphQL after"]


class ExplainingGraphQL(OverGraphQL):
    """The GraphQL driver before issue #15: its placement query selected `infeasible`."""

    async def candidates(self, text: str) -> list[list[str]]:
        data = await self._gql(PLACE, {"t": text})
        return [[g["uuid"] for g in c["gpus"]] for c in data["placementText"]["candidates"]]


def placed(summary_jobs: list[Any]) -> list[tuple[int, int, float | None]]:
    return [(j.job, j.gpus, j.placement.bottleneck_gbps) for j in summary_jobs]


async def cell(profile: str, trace: str, jobs: int, seeds: list[int]) -> dict[str, Any]:
    rates: dict[str, list[float]] = {v: [] for v in [*VARIANTS, *BASELINES]}
    async with driver_for(profile, None) as (client, in_process):
        assert isinstance(in_process, InProcess)
        topology, models = await snapshot(client)
        for index, seed in enumerate(seeds):
            job_list = make_jobs(trace, jobs, seed, index, topology.total)
            seen: list[Any] = []
            order = VARIANTS if index % 2 == 0 else list(reversed(VARIANTS))  # no variant always first
            for variant in order:
                how, when = variant.split()
                if how == "in-process":
                    driver: Any = in_process
                else:
                    driver = ExplainingGraphQL(client) if when == "before" else OverGraphQL(client)
                replay = Replay(driver, topology, models)
                if when == "before":
                    with before():
                        run = await replay.run("service", job_list)
                else:
                    run = await replay.run("service", job_list)
                rates[variant].append(run.decisions_per_s)
                seen.append(placed(run.jobs))
                print(f"  {profile} / {trace} / seed {seed} / {variant}: {run.decisions_per_s:.1f}/s", file=sys.stderr)
            assert all(s == seen[0] for s in seen), f"{profile} seed {seed}: the variants placed differently"
            for policy in BASELINES:
                run = await Replay(in_process, topology, models).run(policy, job_list)
                rates[policy].append(run.decisions_per_s)
    return {"cluster": profile, "trace": trace, "jobs": jobs, "seeds": seeds, "gpus": topology.total,
            "decisions_per_s": {k: [round(x, 1) for x in v] for k, v in rates.items()}}  # fmt: skip


def table(runs: list[dict[str, Any]]) -> str:
    head = "| cell | " + " | ".join(f"service, {v}" for v in VARIANTS) + " | " + " | ".join(BASELINES) + " |"
    lines = [head, "|---" * (1 + len(VARIANTS) + len(BASELINES)) + "|"]
    for r in runs:
        cells = []
        for key in [*VARIANTS, *BASELINES]:
            xs = r["decisions_per_s"][key]
            cells.append(f"{statistics.fmean(xs):,.1f} [{min(xs):,.1f}-{max(xs):,.1f}]")
        lines.append(f"| {r['cluster']} / {r['trace']} ({r['jobs']} jobs) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2", help="comma-separated seeds (default 1,2)")
    parser.add_argument("--jobs", type=int, default=150, help="jobs per seed (default 150)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = [await cell(profile, trace, args.jobs, seeds) for profile, trace in CELLS]
    (ROOT / "docs" / "benchmarks" / "replay_decisions.json").write_text(json.dumps(runs, indent=1))
    print(table(runs))


if __name__ == "__main__":
    asyncio.run(main())
