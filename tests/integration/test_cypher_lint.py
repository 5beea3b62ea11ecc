"""Every named query, and the generated Neo4j DDL, passes Neo4j's parser and semantic checker."""

from __future__ import annotations

import shutil
from pathlib import Path

from graphsvc.store.queries import QueryRegistry, default_registry
from graphsvc.store.schema import graph_schema
from tests.cypher_lint import lint


def lint_problems(registry: QueryRegistry) -> dict[str, list[str]]:
    """What the CI gate reports: any error or warning (deprecations included) on any query."""
    queries = {q.name: q.text for q in registry}
    queries.update({f"ddl/{i}": stmt for i, stmt in enumerate(graph_schema().neo4j_ddl())})
    return {
        name: [f"{d.severity} {d.line}:{d.column} {d.message}" for d in diags]
        for name, diags in lint(queries).items()
        if diags
    }


def test_every_query_and_ddl_lints_clean() -> None:
    registry = default_registry()
    assert len(registry.names()) >= 10
    assert lint_problems(registry) == {}


def test_the_gate_fails_on_a_deliberately_broken_query(tmp_path: Path) -> None:
    # The two files beside the fragments only: every real query is linted (clean) by the test
    # above, and linting them all again took ~2 minutes of a CI run.
    root = tmp_path / "queries"
    shutil.copytree(default_registry().root / "fragments", root / "fragments")
    header = "// @read\n// @param uuid string\n// @row uuid string\n"
    (root / "broken_on_purpose.cypher").write_text(header + "MATCH (g:GPU {uuid: $uuid)\nRETURN g.uuid AS uuid\n")
    (root / "deprecated_on_purpose.cypher").write_text("// @read\nMATCH (g:GPU) RETURN id(g) AS internal\n")
    problems = lint_problems(QueryRegistry(root))
    assert set(problems) == {"broken_on_purpose", "deprecated_on_purpose"}
    assert problems["broken_on_purpose"][0].startswith("error 4:")  # line 4: after the 3 header lines
    assert "deprecated" in problems["deprecated_on_purpose"][0]


def test_linter_catches_deprecations_and_names_the_schema_lacks() -> None:
    results = lint(
        {
            "old_subquery": ("MATCH (h:Host) CALL { WITH h MATCH (h)-[:HAS_GPU]->(g) RETURN count(g) AS n } RETURN n"),
            "typo_label": "MATCH (g:GUP) RETURN g.uuid AS uuid",
            "typo_type": "MATCH (h:Host)-[:HAS_GPUS]->(g:GPU) RETURN g.uuid AS uuid",
            "typo_property": "MATCH (g:GPU) RETURN g.uid AS uuid",
            "clean": "MATCH (h:Host)-[:HAS_GPU]->(g:GPU {uuid: $uuid}) RETURN h.name AS host",
        }
    )
    assert any("deprecated" in d.message for d in results["old_subquery"])
    assert any("GUP" in d.message for d in results["typo_label"])
    assert any("HAS_GPUS" in d.message for d in results["typo_type"])
    assert any("uid" in d.message for d in results["typo_property"])
    assert results["clean"] == []
