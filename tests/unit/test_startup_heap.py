"""Once started, the service freezes its heap (full collections stop walking what lives forever)
and collects its young generation less often; when the last service of the process stops, it
undoes both."""

from __future__ import annotations

import gc
from typing import Any

from graphsvc.api.app import YOUNG_COLLECTION_THRESHOLD, freeze_startup_heap, thaw_startup_heap


def test_the_startup_heap_is_frozen_after_a_full_collection() -> None:
    generations: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            generations.append(int(info["generation"]))

    before = gc.get_threshold()
    gc.callbacks.append(seen)
    try:
        freeze_startup_heap()
        assert 2 in generations  # a full collection first: garbage is freed, not frozen
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, before[1], before[2])
    finally:
        gc.callbacks.remove(seen)
        thaw_startup_heap()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_overlapping_services_restore_the_thresholds_when_the_last_stops() -> None:
    """Two services in one process (as tests run them), the first stopping first: the second
    keeps its settings, and the process gets back the thresholds it had before either."""
    before = gc.get_threshold()
    freeze_startup_heap()
    freeze_startup_heap()
    try:
        thaw_startup_heap()
        assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
        assert gc.get_freeze_count() > 0
    finally:
        thaw_startup_heap()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
