"""Subquery scope clauses in FalkorDB's dialect (graphsvc/store/queries.py, "Dialect")."""

from __future__ import annotations

import re

import pytest

from graphsvc.store.queries import NamedQuery, default_registry, falkordb_dialect, without_comment_lines


@pytest.mark.parametrize(
    ("neo4j", "falkordb"),
    [
        ("CALL (names) {\n  UNWIND names AS n RETURN n\n}", "CALL {\nWITH names\n  UNWIND names AS n RETURN n\n}"),
        (
            "WITH 1 AS a, 2 AS b\n  call (a, b){\n  RETURN a + b AS c\n  }",
            "WITH 1 AS a, 2 AS b\n  CALL {\n  WITH a, b\n  RETURN a + b AS c\n  }",
        ),
        ("CALL () {\nRETURN 1 AS one\n}", "CALL {\nRETURN 1 AS one\n}"),
        ("CALL { WITH x RETURN x AS y }", "CALL { WITH x RETURN x AS y }"),  # already FalkorDB's form
        ("CALL db.indexes() YIELD label RETURN label", "CALL db.indexes() YIELD label RETURN label"),  # a procedure
        ("// as in CALL (x) {\nMATCH (n) RETURN n", "// as in CALL (x) {\nMATCH (n) RETURN n"),  # a comment
        ("RETURN 'CALL (x) {' AS s", "RETURN 'CALL (x) {' AS s"),  # a string
    ],
)
def test_scope_clause_becomes_an_importing_with(neo4j: str, falkordb: str) -> None:
    assert falkordb_dialect(neo4j) == falkordb


def test_a_star_scope_has_no_falkordb_form() -> None:
    with pytest.raises(ValueError, match="name the variables"):
        falkordb_dialect("CALL (*) {\nRETURN 1 AS one\n}")


@pytest.mark.parametrize("query", list(default_registry()), ids=lambda q: q.name)
def test_falkordb_text_differs_from_the_serial_text_only_in_scope_clauses(query: NamedQuery) -> None:
    """Queries write a scope clause on a line of its own (`CALL (a, b) {`): that line becomes two
    in FalkorDB's text (`CALL () {` one), and every other line stays as it is, but for the
    comment-only lines, sent as one line naming the query (queries.py, "Sent text")."""
    expected: list[str] = [f"// {query.name}"]
    for line in without_comment_lines(query.serial_text).splitlines():
        m = re.fullmatch(r"(\s*)CALL \((.*)\) \{", line)
        if m is None:
            expected.append(line)
        else:  # `CALL () {` imports nothing: no WITH
            expected += [f"{m.group(1)}CALL {{"] + ([f"{m.group(1)}WITH {m.group(2)}"] if m.group(2) else [])
    assert query.falkordb_text.splitlines() == expected
    assert not re.search(r"\bCALL\s*\(", query.falkordb_text)


def test_the_placement_statements_import_only_names_into_the_host_maps() -> None:
    for name in ("placement_hosts_fit", "placement_domains_fit", "placement_leaves_fit"):
        text = default_registry()[name]
        assert "CALL (names) {" in text.serial_text and "CALL {\nWITH names\n" in text.falkordb_text
