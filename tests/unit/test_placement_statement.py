"""The placement explanation's Cypher: parameter values as Cypher literals, one paste for Neo4j Browser."""

from __future__ import annotations

import pytest

from graphsvc.placement.statement import Statement, cypher_literal


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (8, "8"),
        (-1, "-1"),
        (0.5, "0.5"),
        (1e9, "1000000000.0"),
        ("h100", "'h100'"),
        ("it's", "'it\\'s'"),
        ("a\\b", "'a\\\\b'"),
        ([], "[]"),
        (["a", 1], "['a', 1]"),
        ({"healthy": True, "min_memory_mib": -1}, "{healthy: true, min_memory_mib: -1}"),
        ({"odd key": 1}, "{`odd key`: 1}"),
    ],
)
def test_cypher_literal(value: object, literal: str) -> None:
    assert cypher_literal(value) == literal


@pytest.mark.parametrize("value", [float("inf"), float("nan"), object()])
def test_values_without_a_literal_are_refused(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        cypher_literal(value)


def test_browser_form_sets_the_parameters_then_runs_the_statement_without_comments() -> None:
    s = Statement(
        "q", "// what it does; with a semicolon\n// @read\nMATCH (h:Host)\nWHERE h.free_gpus = $n\nRETURN h", {"n": 8}
    )
    assert s.browser == ":params {n: 8};\nMATCH (h:Host)\nWHERE h.free_gpus = $n\nRETURN h\n"
