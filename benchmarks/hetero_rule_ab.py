"""Benchmark: the heterogeneous-cluster rule on and off, on the demo cluster (not a test).

Runs the `service` policy on the shaped demo cell of `placement_replay.py` (same cluster,
trace, jobs and seeds) with the rule switched off in process (every request ranked fit
first, as before issue #21, and no per-model search), and compares it, paired by seed, with
the `service` results in docs/benchmarks/replay.json (rule on). Writes
docs/benchmarks/hetero_ab.json and prints the Markdown rows for docs/benchmarks.md.

    python benchmarks/hetero_rule_ab.py      # after placement_replay.py; ~4 minutes
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from graphsvc.bench.stats import compare, spread
from graphsvc.placement import engine, score

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
CELL = ("demo:sus=1", "shaped:load=0.8", 200)
METRICS = [("mean_bottleneck_gbps", True, 1), ("mean_comm_slowdown", False, 2), ("local_share", True, 3),
           ("largest_free_block_mean", True, 1)]  # fmt: skip


def rule_off() -> None:
    """Fit first for every request, and only the shared search (the ranking before issue #21)."""
    original = score.sort_key

    def fit_first(f: score.Facts, *, names_model: bool, cooler_gpus: bool) -> tuple[float, ...]:
        return original(f, names_model=True, cooler_gpus=cooler_gpus)

    async def no_per_model_search(self: Any, models: list[str]) -> None:
        return None

    score.sort_key = fit_first
    engine._Search.search_each_model = no_per_model_search  # type: ignore[method-assign]


def main() -> None:
    from graphsvc.bench.run import bench

    runs = json.loads((OUT / "replay.json").read_text())
    on = next(r for r in runs if (r["cluster"], r["trace"], r["jobs"]) == CELL)
    rule_off()
    off = asyncio.run(bench(CELL[0], CELL[1], ["service"], CELL[2], on["seeds"]))
    (OUT / "hetero_ab.json").write_text(json.dumps({"rule_on": on["per_seed"]["service"],
                                                    "rule_off": off["per_seed"]["service"]}, indent=1))  # fmt: skip
    print("| metric | rule on | rule off | on - off, paired by seed |")
    print("|---|---|---|---|")
    for key, higher, digits in METRICS:
        a = [float(r[key]) for r in on["per_seed"]["service"]]
        b = [float(r[key]) for r in off["per_seed"]["service"]]
        sa, sb, c = spread(a), spread(b), compare(a, b, higher_is_better=higher)
        assert sa and sb and c
        print(f"| {key} | {sa.text(digits)} | {sb.text(digits)} | {c.text(digits)} |")


if __name__ == "__main__":
    main()
