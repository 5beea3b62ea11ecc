"""Every named query's header (// @read|@write, @param, @row) agrees with its Cypher text.

The gateway trusts the header: it refuses to run a declared write as a read and checks
parameter values against the declared types; tests/integration/test_queries_run.py checks
the rows each query returns on both stores against the declared row types.
"""

from __future__ import annotations

import re

import pytest

from graphsvc.store.queries import CypherType, NamedQuery, default_registry, parse_signature, without_locks
from tests.cypher_text import return_columns, writes
from tests.queries import registry_with_tests

QUERIES = list(registry_with_tests())
TEST_ONLY = {"reservations/double_holds", "reservations/incomplete_reservations"}


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.name)
def test_signature_matches_text(query: NamedQuery) -> None:
    sig = query.signature
    assert sig is not None
    assert set(sig.params) == query.parameters, "each $parameter has one // @param line, and only those"
    assert (sig.mode == "write") == writes(query.text), "// @write exactly when the text writes"
    columns = return_columns(query.text)
    if columns is None:
        assert sig.row is None, "no RETURN: no // @row"
    else:
        assert sig.row is not None and list(sig.row) == columns, "// @row lists the RETURN columns in order"


def test_test_only_queries_are_not_in_the_production_registry() -> None:
    production = set(default_registry().names())
    assert not production & TEST_ONLY
    assert set(registry_with_tests().names()) >= TEST_ONLY


@pytest.mark.parametrize(
    ("text", "value", "ok"),
    [
        ("string", "a", True),
        ("string", None, False),
        ("string?", None, True),
        ("int", 3, True),
        ("int", 3.0, False),
        ("int", True, False),
        ("float", 3, True),
        ("float", 2.5, True),
        ("bool", False, True),
        ("bool", 0, False),
        ("map", {"a": 1}, True),
        ("list<string>", ["a", "b"], True),
        ("list<string>", ["a", 1], False),
        ("list<string?>", ["a", None], True),
        ("list<list<int>>", [[1], [2, 3]], True),
        ("list<map>?", None, True),
        ("any", None, True),
    ],
)
def test_types_accept(text: str, value: object, ok: bool) -> None:
    assert CypherType.parse(text).accepts(value) is ok


def test_header_errors_name_the_query() -> None:
    with pytest.raises(ValueError, match="q1 declares neither"):
        parse_signature("MATCH (n) RETURN n", "q1")
    with pytest.raises(ValueError, match=r"q2.*unknown type"):
        parse_signature("// @read\n// @param x integer\nRETURN $x AS x", "q2")
    sig = parse_signature("// @read\n// @param x list<int>\n// @row x list<int>, y string?\nRETURN $x AS x", "q3")
    assert sig.check_params({"x": ["1"]}) == ["$x must be list<int>, got list"]
    assert sig.check_row({"x": [1], "y": None}) == []


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.name)
def test_the_serial_text_leaves_out_only_lock_lines(query: NamedQuery) -> None:
    """A store that runs writes one at a time runs `serial_text`: the same statement without the
    lines that only take locks or only check what a concurrent write could change
    (graphsvc/store/queries.py, "Locks")."""
    lines = query.text.splitlines()
    kept = query.serial_text.splitlines()
    assert "//@lock" not in query.serial_text
    assert NamedQuery(query.name, query.serial_text, query.path).parameters == query.parameters
    assert all(line in lines for line in kept)
    inside = False
    for line in lines:
        if line.strip() == "//@lock-begin":
            inside = True
        if not inside and not line.rstrip().endswith("//@lock"):
            assert line in kept
        if line.strip() == "//@lock-end":
            inside = False
    for line in (line for line in lines if line.rstrip().endswith("//@lock")):
        code = line.split("//@lock")[0].strip()
        assert code.startswith(("SET ", "FOREACH ")) and code.count(":") == 1, f"not a lock: {line!r}"
        assert "=" not in code, f"a lock sets a label, never a value: {line!r}"
    assert (query.text == query.serial_text) == ("//@lock" not in query.text)
    if "//@lock" in query.text:
        assert query.writes, "only writes take locks"


@pytest.mark.parametrize(
    ("text", "serial"),
    [
        ("MATCH (g:GPU)\nSET g:GPU //@lock\nRETURN g", "MATCH (g:GPU)\nRETURN g"),
        ("WITH 1 AS a\n//@lock-begin\nFOREACH (x IN [] | SET x:Host)\n//@lock-end\nRETURN a", "WITH 1 AS a\nRETURN a"),
        ("RETURN 1 // not a //@locker", "RETURN 1 // not a //@locker"),
        ("RETURN 1", "RETURN 1"),
    ],
)
def test_without_locks(text: str, serial: str) -> None:
    assert without_locks(text) == serial


def test_an_unbalanced_lock_block_is_refused() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        without_locks("//@lock-begin\nSET g:GPU\nRETURN 1")


_CLAUSE_END = re.compile(
    r"\b(?:SET|REMOVE|WITH|RETURN|MERGE|CREATE|MATCH|OPTIONAL|FOREACH|UNWIND|DELETE|DETACH|CALL|WHERE|ORDER|LIMIT)\b|[)|]",
    re.IGNORECASE,
)


def removals(text: str) -> list[int]:
    """How many properties each SET or REMOVE clause removes (`x.k = NULL`, `REMOVE x.a, x.b`)."""
    text = re.sub(r"//[^\n]*", "", text)
    counts = []
    for m in re.finditer(r"\b(SET|REMOVE)\b", text, re.IGNORECASE):
        end = _CLAUSE_END.search(text, m.end())
        clause = text[m.end() : end.start() if end else len(text)]
        if m.group(1).upper() == "SET":
            counts.append(len(re.findall(r"=\s*NULL\b", clause, re.IGNORECASE)))
        else:
            counts.append(clause.count(",") + 1)
    return counts


def test_removals_counted_as_falkordb_applies_them() -> None:
    assert removals("SET x.a = NULL, x.b = 1, x.c = null\nWITH x REMOVE x.a, x.b, x.c RETURN 1") == [2, 3]
    assert removals("FOREACH (y IN ys | SET y.a = NULL, y.b = NULL) SET x.c = NULL") == [2, 1]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.name)
def test_no_clause_removes_more_than_two_properties(query: NamedQuery) -> None:
    """FalkorDB 4.x removes the wrong properties when one clause removes three or more
    (docs/store.md, "FalkorDB's multi-property removal")."""
    assert max(removals(query.text), default=0) <= 2
