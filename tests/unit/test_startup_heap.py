"""Once started, the service freezes its heap: full collections stop walking what lives forever."""

from __future__ import annotations

import gc
from typing import Any

from graphsvc.api.app import freeze_startup_heap


def test_the_startup_heap_is_frozen_after_a_full_collection() -> None:
    generations: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            generations.append(int(info["generation"]))

    gc.callbacks.append(seen)
    try:
        freeze_startup_heap()
        assert 2 in generations  # a full collection first: garbage is freed, not frozen
        assert gc.get_freeze_count() > 0
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
