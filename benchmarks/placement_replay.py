"""Benchmark: trace replay of the service's placement against scheduler baselines (not a test).

Every cluster x trace runs every policy on the same jobs, in one process, side by side:
clusters DGX H100 SuperPOD (4 SU), GB200 NVL72 (one SU of 8 racks), and the mixed demo;
traces: the real Alibaba openb trace (read from shared/, never copied) and a seeded
LLM-like trace. Writes docs/benchmarks/replay.json and replay.png.

    python benchmarks/placement_replay.py [path/to/alibaba-openb-pods-default.csv]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from graphsvc.bench.run import POLICIES, bench

ROOT = Path(__file__).resolve().parents[1]
ALIBABA = ROOT.parent / "shared" / "data" / "traces" / "alibaba-openb-pods-default.csv"
CLUSTERS = ["superpod-h100:sus=4", "nvl72:racks=8", "demo"]


async def main(alibaba: Path) -> None:
    runs: list[dict[str, Any]] = []
    have_alibaba = alibaba.exists()  # noqa: ASYNC240 - once, before any awaiting
    for cluster in CLUSTERS:
        runs.append(await bench(cluster, "generated", POLICIES, jobs=200, seed=7))
        if have_alibaba:
            runs.append(await bench(cluster, str(alibaba), POLICIES, jobs=800, seed=7))
    out = ROOT / "docs" / "benchmarks"
    (out / "replay.json").write_text(json.dumps(runs, indent=1))
    plot(runs, out / "replay.png")
    for run in runs:
        print(f"\n{run['cluster']} / {run['trace']} ({run['jobs']} jobs, {run['gpus']} GPUs)")
        print("| policy | mean bottleneck GB/s | in one NVLink domain / leaf | comm slowdown | IB hops | "
              "queue delay s | utilization | largest free block | decisions/s |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for r in run["results"]:
            print(f"| {r['policy']} | {r['mean_bottleneck_gbps']} | {r['local_share']} | {r['mean_comm_slowdown']} | "
                  f"{r['mean_ib_hops']} | {r['mean_queue_delay_s']} | {r['utilization']} | "
                  f"{r['largest_free_block_mean']} | {r['decisions_per_s']} |")  # fmt: skip


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [f"{r['cluster'].split(':')[0]}\n{r['trace'][:14]}" for r in runs]
    width = 0.2
    for k, policy in enumerate(POLICIES):
        bw = [next(x["mean_bottleneck_gbps"] or 0 for x in r["results"] if x["policy"] == policy) for r in runs]
        local = [next(x["local_share"] or 0 for x in r["results"] if x["policy"] == policy) for r in runs]
        xs = [i + (k - 1.5) * width for i in range(len(runs))]
        axes[0].bar(xs, bw, width, label=policy)
        axes[1].bar(xs, local, width, label=policy)
    for ax, title in zip(axes, ["mean bottleneck bandwidth (GB/s)", "multi-GPU jobs in one NVLink domain / leaf"],
                         strict=True):  # fmt: skip
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ALIBABA))
