"""What the stores are sent: each statement without its comment-only lines, under one line naming
it (graphsvc/store/queries.py, "Sent text")."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphsvc.store.queries import (
    NamedQuery,
    QueryRegistry,
    default_registry,
    refuse_strings_across_lines,
    sent_form,
    without_comment_lines,
)

QUERIES = list(default_registry())


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.name)
def test_each_store_is_sent_the_code_lines_under_the_query_name(query: NamedQuery) -> None:
    for full, sent in ((query.text, query.neo4j_text), (query.serial_text, query.falkordb_text)):
        first, *rest = sent.splitlines()
        assert first == f"// {query.name}"
        assert not any(line.lstrip().startswith("//") for line in rest)
        code = [line for line in full.splitlines() if not line.lstrip().startswith("//")]
        if sent is query.neo4j_text:
            assert rest == code
        else:  # FalkorDB's dialect may write a scope clause as two lines (test_falkordb_dialect)
            assert len(rest) >= len(code)
    assert NamedQuery(query.name, query.neo4j_text, query.path).parameters == query.parameters


def test_the_reservation_batches_are_sent_without_two_thirds_of_their_text() -> None:
    """The write statements a reservation cycle sends: every one of them is appended to FalkorDB's log."""
    registry = default_registry()
    for name in ("reservations/reserve_in_host_batch_scan", "reservations/release_batch"):
        query = registry[name]
        assert len(query.falkordb_text) * 2 < len(query.serial_text)


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("// header\nMATCH (n)\n  // inside\nRETURN n // trailing", "// q\nMATCH (n)\nRETURN n // trailing"),
        ("RETURN '// not a comment' AS s\n// last", "// q\nRETURN '// not a comment' AS s\n"),
        ("MATCH (n)\nSET n:GPU //@lock\nRETURN n", "// q\nMATCH (n)\nSET n:GPU //@lock\nRETURN n"),
    ],
)
def test_only_lines_that_hold_nothing_but_a_comment_are_left_out(text: str, sent: str) -> None:
    assert sent_form("q", text) == sent
    assert without_comment_lines(text) == sent.removeprefix("// q\n")


@pytest.mark.parametrize(
    "text",
    ["RETURN 'a\n// b' AS s", 'RETURN "a\nb" AS s', "RETURN 1 AS `a\nb`", "RETURN 'it\\'s\n' AS s"],
)
def test_a_string_across_lines_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="spans lines"):
        refuse_strings_across_lines(text, "q")


@pytest.mark.parametrize(
    "text",
    ["RETURN 'a' AS s\n// it's here\nRETURN 1", 'RETURN "x\\\\" AS s\nRETURN 2', "RETURN '`' AS s\nRETURN 3"],
)
def test_strings_on_one_line_and_quotes_in_comments_pass(text: str) -> None:
    refuse_strings_across_lines(text, "q")


def test_the_registry_refuses_a_query_whose_string_spans_lines(tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    (tmp_path / "bad.cypher").write_text("// @read\n// @row s string\nRETURN 'a\n// b' AS s\n")
    with pytest.raises(ValueError, match="query bad: a string literal spans lines"):
        QueryRegistry(tmp_path)


def test_the_registry_refuses_a_fragment_whose_string_spans_lines(tmp_path: Path) -> None:
    """Checked in the fragment's own file, so every form that includes it (a scan form's twin too) is covered."""
    (tmp_path / "fragments").mkdir()
    (tmp_path / "fragments" / "part.cypher").write_text("WITH 'a\n// b' AS s\n")
    (tmp_path / "ok.cypher").write_text("// @read\n// @row s string\n//@include part\nRETURN s\n")
    with pytest.raises(ValueError, match="query fragments/part: a string literal spans lines"):
        QueryRegistry(tmp_path)
