"""Once started, the service freezes its heap (full collections stop walking what lives forever)
and collects its young generation less often; stopped, it undoes both."""

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
        thresholds = freeze_startup_heap()
        assert 2 in generations  # a full collection first: garbage is freed, not frozen
        assert gc.get_freeze_count() > 0
        assert thresholds == before
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, before[1], before[2])
    finally:
        gc.callbacks.remove(seen)
        thaw_startup_heap(before)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
