"""The export format names, importable without the server stack (the CLI's start-up stays fast)."""

from __future__ import annotations

EXPORT_FORMATS = [
    "slurm-tree",
    "slurm-block",
    "slurm-yaml",
    "slurm-gres",
    "slurm-nodes",
    "kueue",
    "kueue-labels",
    "topograph-labels",
    "nfd",
    "dra",
    "volcano",
    "nccl",
    "sites",
]
DRIFT_FORMATS = ["slurm", "kueue", "volcano", "labels"]
