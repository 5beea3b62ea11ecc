"""The Neo4j server's version, checked at startup (graphsvc/store/neo4j_backend.py)."""

from __future__ import annotations

import pytest

from graphsvc.store.neo4j_backend import neo4j_version_problem


@pytest.mark.parametrize(
    ("agent", "refused"),
    [
        ("Neo4j/5.26.0", False),
        ("Neo4j/5.23.0", False),
        ("Neo4j/2025.01.0", False),  # calendar versions after 5.26
        ("Neo4j/5", False),  # a managed service that states no minor version
        ("Neo4j/5.22.1", True),  # no CALL (x) { } scope clause yet
        ("Neo4j/5.12.0", True),
        ("Neo4j/4.4.30", True),
        ("something else", False),  # not a version this check can read: left to the queries
    ],
)
def test_servers_older_than_the_scope_clause_are_refused(agent: str, refused: bool) -> None:
    problem = neo4j_version_problem(agent)
    assert (problem is not None) == refused
    if problem is not None:
        assert "5.23 or later" in problem and agent in problem
