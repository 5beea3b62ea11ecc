"""Prints docs/benchmarks/placement.json as the Markdown table in docs/benchmarks.md."""

from __future__ import annotations

import json
from pathlib import Path

report = json.loads((Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "placement.json").read_text())
labels = list(report["runs"][0]["latency"])
print("| GPUs | hosts | load s | " + " | ".join(labels) + " |")
print("|" + "---|" * (3 + len(labels)))
for run in report["runs"]:
    cells = [f"{run['latency'][k]['p50_ms']:.1f} / {run['latency'][k]['p99_ms']:.1f}" for k in labels]
    print(f"| {run['gpus']:,} | {run['hosts']:,} | {run['load_s']} | " + " | ".join(cells) + " |")
if "p50_100k_over_8k" in report:
    print(
        f"\np50 at 100k / p50 at 8k (single-host): {report['p50_100k_over_8k']}; "
        f"naive scan / placement at 100k (p50): {report['naive_over_placement_100k']}x"
    )
