"""Fixtures shared by the unit tests of the placement search."""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.placement import engine as engine_module


@pytest.fixture
def adopted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The host maps each candidate statement handed the search (their GPU rows are what a leaf
    page costs: read, parsed and joined with each host's topology)."""
    counts: list[int] = []
    real = engine_module._Search.adopt

    async def counting(self: Any, maps: list[Any]) -> None:
        counts.append(len(maps))
        await real(self, maps)

    monkeypatch.setattr(engine_module._Search, "adopt", counting)
    return counts
