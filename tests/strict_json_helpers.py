"""A spy on `strict_json.parse_model`, the one-pass parse of a body (graphsvc/api/one_pass_route.py):
which bodies took the short way, for the tests that send them both ways."""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.api import strict_json


def short_way_taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A list that gets, for each body `parse_model` is given from now on (this test only), whether
    it took it (a model) or left it to the strict path (None)."""
    taken: list[bool] = []
    parse = strict_json.parse_model

    def counted(model: Any, data: bytes) -> Any:
        out = parse(model, data)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(strict_json, "parse_model", counted)
    return taken
