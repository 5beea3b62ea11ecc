"""Table tests for the preemption cost: lost GPU-time since the last checkpoint, plus a restart."""

from __future__ import annotations

import pytest

from graphsvc.reservations.checkpoints import (
    MIG_NEVER_WHOLE,
    MIG_NOT_PREEMPTIBLE,
    Option,
    Progress,
    checkpoint_at,
    choose,
    infeasible_reason,
    lost_gpu_seconds,
)


@pytest.mark.parametrize(
    ("progress", "moment", "expected_checkpoint"),
    [
        (Progress(8, created_at=0.0), 500.0, 0.0),  # never reported: its start
        (Progress(8, created_at=0.0, last_checkpoint_at=400.0), 500.0, 400.0),
        # checkpoints every 60 s from 400: at 500 it has the one of 460
        (Progress(8, created_at=0.0, last_checkpoint_at=400.0, checkpoint_every_s=60.0), 500.0, 460.0),
        (Progress(8, created_at=0.0, last_checkpoint_at=900.0), 500.0, 500.0),  # a clock ahead of ours
    ],
)
def test_checkpoint_at(progress: Progress, moment: float, expected_checkpoint: float) -> None:
    assert checkpoint_at(progress, moment) == expected_checkpoint


def test_lost_gpu_seconds_counts_work_and_restart() -> None:
    assert lost_gpu_seconds(Progress(4, created_at=0.0, last_checkpoint_at=100.0), 200.0, restart_s=50.0) == 600.0


def test_choose_least_lost_work_versus_fewest_victims() -> None:
    options = [
        Option(0, ("big-fresh",), priority_sum=0, score=1.0),  # one victim that just checkpointed
        Option(1, ("small-a", "small-b"), priority_sum=0, score=1.0),
    ]
    cost = {"big-fresh": 5000.0, "small-a": 100.0, "small-b": 200.0}
    best, lost = choose(options, cost) or (None, 0.0)
    assert best is not None and best.key == 1 and lost == 300.0
    by_priority, lost_p = choose(options, cost, policy="priority") or (None, 0.0)
    assert by_priority is not None and by_priority.key == 0 and lost_p == 5000.0


def test_choose_prefers_no_victims_and_nothing_to_choose() -> None:
    assert choose([], {}) is None
    free, lost = choose([Option(0, ("v",), 0, 1.0), Option(1, (), 0, 0.5)], {"v": 1.0}) or (None, 1.0)
    assert free is not None and free.key == 1 and lost == 0.0


@pytest.mark.parametrize(
    ("mig_profile", "says", "never_says"),
    [
        ("3g.40gb", MIG_NOT_PREEMPTIBLE, "no placement fits"),  # a slice request: slices are never victims
        ("1g.10gb", "MIG profile 1g.10gb", MIG_NEVER_WHOLE),
        (None, MIG_NEVER_WHOLE, MIG_NOT_PREEMPTIBLE),  # a whole-GPU request: MIG GPUs are never whole
        (None, "no placement fits even if every lower-priority preemptible reservation were ended", "profile"),
    ],
)
def test_infeasible_reason_names_mig_as_the_blocker(mig_profile: str | None, says: str, never_says: str) -> None:
    reason = infeasible_reason(mig_profile)
    assert says in reason and never_says not in reason
