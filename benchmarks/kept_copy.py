"""A kept store (`placement_latency.py --keep DIR SIZE`) measured on a copy, never opened itself.

Benchmarks that read a kept store copy it to a scratch folder beside it, measure there and
remove the copy: the kept store stays as loaded for the next run or the other tree's code.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def kept_arguments(description: str, runs: int) -> argparse.Namespace:
    """The command line these benchmarks share: the kept store's folder and `--runs`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("kept", type=Path, help="a kept store's folder (placement_latency.py --keep DIR SIZE)")
    parser.add_argument("--runs", type=int, default=runs)
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def copy_kept(kept: Path, folder: Path) -> Path:
    """A fresh copy of `kept` in `folder` (its socket, pid and lock left out): a store to open."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(kept, folder, ignore=shutil.ignore_patterns("*.sock", "*.pid", "*.lock"))
    return folder


def on_a_copy(kept: Path, suffix: str, measure: Callable[[Path], Coroutine[Any, Any, T]]) -> T:
    """`measure` run on a copy of `kept` in `<kept>-<suffix>`, removed after."""
    scratch = copy_kept(kept, kept.with_name(f"{kept.name}-{suffix}"))
    try:
        return asyncio.run(measure(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
