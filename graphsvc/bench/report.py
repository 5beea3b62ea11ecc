"""The replay's Markdown tables and plot, from the JSON `benchmarks/placement_replay.py` writes.

Every cell is `mean [min-max]` over the seeds; the verdict table states a lead (or a
deficit) against the Kueue-like baseline only where `stats.compare` finds one: every seed
on the same side and the 95% interval of the paired difference clear of zero.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

COLUMNS = [
    ("mean_bottleneck_gbps", "bottleneck GB/s", 1),
    ("local_share", "in one domain / leaf", 3),
    ("mean_comm_slowdown", "comm slowdown", 2),
    ("mean_ib_hops", "IB hops", 2),
    ("mean_queue_delay_s", "queue delay s", 0),
    ("p95_queue_delay_s", "p95 delay s", 0),
    ("utilization", "utilization", 3),
    ("largest_free_block_mean", "largest free block", 1),
    ("decisions_per_s", "decisions/s", 1),
]
VERDICT_COLUMNS = [
    ("mean_bottleneck_gbps", "bandwidth"),
    ("mean_comm_slowdown", "slowdown"),
    ("local_share", "one domain / leaf"),
    ("mean_queue_delay_s", "queue delay"),
    ("utilization", "utilization"),
]
BEGIN = "<!-- replay-tables:begin (benchmarks/placement_replay.py writes this part) -->"
END = "<!-- replay-tables:end -->"


def _cell(c: dict[str, float] | None, digits: int, seeds: int) -> str:
    if c is None:
        return "-"
    some = f" ({c['n']:.0f} of {seeds} seeds)" if c["n"] < seeds else ""
    if c["n"] == 1:
        return f"{c['mean']:.{digits}f}{some}"
    return f"{c['mean']:.{digits}f} [{c['min']:.{digits}f}-{c['max']:.{digits}f}]{some}"


def _trace_line(run: dict[str, Any]) -> str:
    stats = run["trace_stats"]
    share = [s["large_gpu_hour_share"] for s in stats]
    load = [s["offered_load"] for s in stats]
    multi = [s["multi_gpu_jobs"] for s in stats]
    return (
        f"GPU-hours in 8-512 GPU jobs {statistics.fmean(share):.0%} [{min(share):.0%}-{max(share):.0%}], "
        f"offered load {statistics.fmean(load):.2f} [{min(load):.2f}-{max(load):.2f}], "
        f"multi-GPU jobs {min(multi)}-{max(multi)} per seed"
    )


def tables(runs: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for run in runs:
        seeds = ", ".join(str(s) for s in run["seeds"])
        out.append(f"#### {run['cluster']} / {run['trace']} ({run['jobs']} jobs x {len(run['seeds'])} seeds, "
                   f"{run['gpus']} GPUs)\n")  # fmt: skip
        out.append(f"Seeds {seeds}; {_trace_line(run)}.\n")
        out.append("| policy | " + " | ".join(label for _, label, _ in COLUMNS) + " |")
        out.append("|---" * (len(COLUMNS) + 1) + "|")
        seeds_run = len(run["seeds"])
        for policy, cells in run["policies"].items():
            out.append(f"| {policy} | " + " | ".join(_cell(cells[k], d, seeds_run) for k, _, d in COLUMNS) + " |")
        out.append("")
    return "\n".join(out)


def verdicts(runs: list[dict[str, Any]]) -> str:
    """Service and lookahead against the Kueue-like baseline, paired by seed."""
    head = "| cluster / trace | policy | " + " | ".join(label for _, label in VERDICT_COLUMNS) + " |"
    out = [head, "|---" * (len(VERDICT_COLUMNS) + 2) + "|"]
    for run in runs:
        for policy in ("service", "lookahead"):
            v = run.get("vs_baseline", {}).get(policy)
            if not v:
                continue
            cells = [v[k]["text"] if k in v else "-" for k, _ in VERDICT_COLUMNS]
            out.append(f"| {run['cluster']} / {run['trace']} | {policy} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def replace_section(doc: str, body: str) -> str:
    """`doc` with the text between the markers replaced by `body` (markers kept)."""
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[:start] + "\n\n" + body.strip() + "\n\n" + doc[end:]


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Bandwidth and slowdown per cell and policy: bars at the mean, whiskers from min to max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = list(runs[0]["policies"]) if runs else []
    fig, axes = plt.subplots(2, 1, figsize=(13, 8))
    labels = [f"{r['cluster']}\n{r['trace'][:18]}" for r in runs]
    width = 0.8 / max(1, len(policies))
    for ax, (key, title) in zip(
        axes,
        [("mean_bottleneck_gbps", "mean bottleneck bandwidth, GB/s (higher is better)"),
         ("mean_comm_slowdown", "mean communication slowdown vs best at that moment (lower is better)")],
        strict=True,
    ):  # fmt: skip
        for k, policy in enumerate(policies):
            cells = [r["policies"][policy][key] for r in runs]
            means = [c["mean"] if c else 0.0 for c in cells]
            lo = [c["mean"] - c["min"] if c else 0.0 for c in cells]
            hi = [c["max"] - c["mean"] if c else 0.0 for c in cells]
            xs = [i + (k - (len(policies) - 1) / 2) * width for i in range(len(runs))]
            ax.bar(xs, means, width, yerr=[lo, hi], capsize=2, label=policy)
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_title(title + "; whiskers: min-max over seeds", fontsize=9)
    if key == "mean_comm_slowdown":
        axes[1].set_yscale("log")
    axes[0].legend(fontsize=8, ncol=len(policies))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
