"""What preempting a job costs: the GPU-time it loses since its last checkpoint, plus a restart.

Priority alone says whom we may preempt, not whom we should: ending a 512-GPU job one
minute after its checkpoint loses little, ending a 16-GPU job that has not checkpointed for
six hours loses much more. Holders report progress with renew (`lastCheckpointAt`, and
optionally `checkpointEverySeconds`); the cost of a victim is then its GPUs times the time
since the checkpoint it will have at the moment its GPUs move (a job that checkpoints every
E seconds and gets a grace period will have taken the checkpoints due by then), plus its
GPUs times a restart cost (reloading the checkpoint, warming up). A job that never reported
is assumed to have checkpointed when it started. Pure functions; table tests in
tests/unit/test_checkpoint_cost.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

RESTART_COST_S = 300.0  # GPU-seconds per GPU to restart from a checkpoint (load, warm up)


@dataclass(frozen=True)
class Progress:
    """What the service knows about a victim's progress."""

    gpus: int
    created_at: float
    last_checkpoint_at: float | None = None
    checkpoint_every_s: float | None = None


def checkpoint_at(p: Progress, moment: float) -> float:
    """The latest checkpoint the job will have at `moment`."""
    last = p.last_checkpoint_at if p.last_checkpoint_at is not None else p.created_at
    last = min(last, moment)
    every = p.checkpoint_every_s
    if every is not None and every > 0:
        last += math.floor((moment - last) / every) * every
    return last


def lost_gpu_seconds(p: Progress, moment: float, restart_s: float = RESTART_COST_S) -> float:
    """GPU-seconds lost if the job's GPUs move at `moment`: the work since its checkpoint, and a restart."""
    return p.gpus * ((moment - checkpoint_at(p, moment)) + restart_s)


@dataclass(frozen=True)
class Option:
    """One way to place the preempting job: the victims it displaces and how well it fits."""

    key: int  # the caller's index for it
    victims: tuple[str, ...]
    priority_sum: int
    score: float


def choose(
    options: Sequence[Option], cost: dict[str, float], *, policy: str = "checkpoint"
) -> tuple[Option, float] | None:
    """The best option and its lost GPU-seconds.

    `checkpoint`: least lost work, then fewest victims, then lowest priorities, then fit.
    `priority` (the old rule, kept for comparison): fewest victims, then lowest priorities.
    """
    best: tuple[tuple[float, ...], Option, float] | None = None
    for o in options:
        lost = sum(cost.get(v, 0.0) for v in o.victims)
        if policy == "priority":
            rank: tuple[float, ...] = (len(o.victims), o.priority_sum, -o.score)
        else:
            rank = (round(lost, 6), len(o.victims), o.priority_sum, -o.score)
        if best is None or rank < best[0]:
            best = (rank, o, lost)
    return None if best is None else (best[1], best[2])


# MIG slices are not preemptible (docs/reservations.md, "MIG slices are not preemptible"): a
# slice holder is never a victim, so a plan never moves a slice, and a whole-GPU preemptor could
# not use a MIG GPU anyway (placement never offers one whole). The plan's reason says so when it
# is the blocker, so that nobody waits for a preemption that cannot come.
MIG_NOT_PREEMPTIBLE = (
    "MIG slice reservations are never preemption victims: a slice request takes only free slices "
    "(reserve it normally, or wait for slices to be released)"
)
MIG_NEVER_WHOLE = "GPUs in MIG mode are never offered whole, so their slice holders are not victims either"


def infeasible_reason(mig_profile: str | None) -> str:
    """Why a preemption plan found nothing: for a slice request, because slices are not preemptible."""
    if mig_profile is not None:
        return f"no preemption plan for MIG profile {mig_profile}: {MIG_NOT_PREEMPTIBLE}"
    return f"no placement fits even if every lower-priority preemptible reservation were ended ({MIG_NEVER_WHOLE})"
