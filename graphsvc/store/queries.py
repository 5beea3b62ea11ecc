"""Named Cypher queries, one ``.cypher`` file each under ``queries/``.

A query's name is its path below ``queries/`` without the extension
(``ingest_host``, ``migrations/0002_1_gpu_state_default``). Files under ``queries/fragments/``
are not queries: a line ``//@include NAME`` in a query (or in a fragment) is replaced by that
fragment, so a statement tail shared by several writes (the counter recount) is written once.
Code refers to queries only by name and passes values only as ``$parameters``; nothing is ever
spliced into query text, so a hostile string can only be stored.

Each query declares its signature in header comments (docs/architecture.md, "Typed queries"):

    // @read                      (or // @write: the gateway runs it only through Gateway.write)
    // @param hosts list<string>  (one line per $parameter; the gateway checks values against it)
    // @row host string, gpu int, rail int?   (the columns it returns, in order; none: no rows)

Types: string, int, float (an int is accepted), bool, map, any, list<T>; a trailing ``?``
admits null. tests/unit/test_query_signatures.py checks every declaration against its text
($parameters used, RETURN columns, write clauses); tests/integration/test_queries_run.py
checks the rows each query returns on both stores against its @row types.

Locks: under Neo4j's read committed isolation a write takes its locks itself, by setting a label
its nodes already have, in one global order (queries/fragments/lock_counters.cypher). A line
ending in ``//@lock``, and the lines between ``//@lock-begin`` and ``//@lock-end``, only take
locks, or only check what a write committed meanwhile could have changed (a block that passes
every row it gets when no other write ran: release_batch's check that a reservation holds no GPU
its first read did not lock). A store that runs writes one at a time (FalkorDB: one writer per
graph) needs none and runs ``serial_text``, the text without them: there they cost time and change
nothing (~2-3 ms of a 16-request batch statement; the release batch's check ~13-16% of a
batch of six).
Everything else in the two texts is the same.

Scan forms: a fragment in SCAN_FORMS has a twin that reads the same units by a scan instead of
index seeks (placement_free_blocks_scan says why). A query that includes such a fragment also
gets a ``<name>_scan`` form, derived here: the same text with the twin included instead (its own
includes only; migrations get none), and the same header but for the @param lines of parameters
it no longer uses. The caller picks the form (the engine, by the cluster's host count).

Dialect: a subquery names the variables it imports with Neo4j 5's scope clause, ``CALL (names) {``
(the form Neo4j's linter accepts; ``CALL { WITH names`` is deprecated there). FalkorDB has no
scope clause, so ``falkordb_text`` (what the FalkorDB backend runs) is ``serial_text`` with each
``CALL (a, b) {`` written ``CALL { WITH a, b`` and ``CALL () {`` written ``CALL {``, which mean the
same. A scope clause stands on a line of its own (only such a line is rewritten); ``CALL (*)`` has
no FalkorDB form and is refused when the query is loaded.

Sent text: a store is sent a statement without its comment-only lines, under one line naming the
query (``// reservations/release_batch``, what a slow log or Neo4j's query log then shows):
``falkordb_text`` and ``neo4j_text``. The comments are the statements' documentation, two thirds
of their text (a reserve batch 10.5 KB, 3.4 KB without them), and FalkorDB writes every write
statement's whole text to its append-only log: ~3x the bytes per reservation written and synced,
and a log that reached its rewrite size ~3x as often (docs/benchmarks.md, "Stop 69"). A line that
is only a comment cannot be part of a string: a string literal spanning lines is refused when the
query is loaded. `text` keeps them (explain, the lint, the checks of each query's declarations).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Literal

from graphsvc.resources import resource_dir

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
# A comment, from `//` to its line's end: left out when the parameters a text names are found.
_COMMENT_TO_LINE_END = re.compile(r"//[^\n]*")
# A line that holds only a comment, its line break too: left out of the text sent ("Sent text").
_COMMENT_ONLY_LINE = re.compile(r"^[ \t]*//[^\n]*(?:\n|\Z)", re.MULTILINE)
# A comment, a string literal closed on its line (backslash escapes; backticks double themselves),
# or a lone quote: what refuse_strings_across_lines reads.
_ONE_LINE_TOKEN = re.compile(r"//[^\n]*|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|`[^`\n]*`|['\"`]")
_QUOTES = frozenset("'\"`")


_SCALARS = frozenset({"string", "int", "float", "bool", "map", "any"})


@dataclass(frozen=True)
class CypherType:
    """A declared parameter or column type: a scalar, or a list of a type; maybe nullable."""

    base: str  # string | int | float | bool | map | any | list
    nullable: bool = False
    item: CypherType | None = None  # for lists

    @staticmethod
    def parse(text: str) -> CypherType:
        t = text.strip()
        nullable = t.endswith("?")
        t = t.removesuffix("?").strip()
        if t.startswith("list<") and t.endswith(">"):
            return CypherType("list", nullable, CypherType.parse(t[5:-1]))
        if t not in _SCALARS:
            raise ValueError(f"unknown type {text!r} (known: {', '.join(sorted(_SCALARS))}, list<T>, T?)")
        return CypherType(t, nullable)

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.nullable or self.base == "any"
        if self.base == "any":
            return True
        if self.base == "list":
            item = self.item or CypherType("any")
            return isinstance(value, list | tuple) and all(item.accepts(v) for v in value)
        if self.base == "bool":
            return isinstance(value, bool)
        if isinstance(value, bool):
            return False
        if self.base == "int":
            return isinstance(value, int)
        if self.base == "float":
            return isinstance(value, int | float)
        if self.base == "string":
            return isinstance(value, str)
        return isinstance(value, Mapping)  # map

    def __str__(self) -> str:
        inner = f"list<{self.item}>" if self.base == "list" else self.base
        return inner + ("?" if self.nullable else "")


@dataclass(frozen=True)
class Signature:
    """What a query declares about itself in its header comments."""

    mode: Literal["read", "write"]
    params: dict[str, CypherType] = field(default_factory=dict)
    row: dict[str, CypherType] | None = None  # None: returns no rows

    def check_params(self, params: Mapping[str, object]) -> list[str]:
        """Problems with these parameter values (by declared type); empty if none."""
        return [
            f"${name} must be {kind}, got {type(params[name]).__name__}"
            for name, kind in self.params.items()
            if name in params and not kind.accepts(params[name])
        ]

    def check_row(self, row: Mapping[str, object]) -> list[str]:
        """Problems with one returned row (columns and their types); empty if none."""
        if self.row is None:
            return [f"returned a row {sorted(row)} but declares none"]
        if set(row) != set(self.row):
            return [f"columns {list(row)} differ from the declared {list(self.row)}"]
        return [
            f"column {name} must be {kind}, got {row[name]!r}"
            for name, kind in self.row.items()
            if not kind.accepts(row[name])
        ]


_HEADER = re.compile(r"^//\s*@(read|write|param|row)\b(.*)$")


def parse_signature(text: str, name: str) -> Signature:
    """The @read/@write, @param and @row lines of a query file (its own text, before includes)."""
    mode: Literal["read", "write"] | None = None
    params: dict[str, CypherType] = {}
    row: dict[str, CypherType] | None = None
    for line in text.splitlines():
        m = _HEADER.match(line.strip())
        if m is None:
            continue
        tag, rest = m.group(1), m.group(2).strip()
        try:
            if tag in ("read", "write"):
                if mode is not None:
                    raise ValueError("declares @read/@write twice")
                mode = "read" if tag == "read" else "write"
            elif tag == "param":
                pname, _, kind = rest.partition(" ")
                params[pname.lstrip("$")] = CypherType.parse(kind)
            else:
                row = row or {}
                for column in _split_top(rest):
                    cname, _, kind = column.strip().partition(" ")
                    row[cname] = CypherType.parse(kind)
        except ValueError as exc:
            raise ValueError(f"query {name}: {line.strip()!r}: {exc}") from None
    if mode is None:
        raise ValueError(f"query {name} declares neither // @read nor // @write")
    return Signature(mode, params, row)


def _split_top(text: str) -> list[str]:
    """Split at commas outside <...> (list<list<int>> stays whole)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def parameters_in(text: str) -> frozenset[str]:
    """The $parameters a statement's text uses, comments aside."""
    return frozenset(_PARAM.findall(_COMMENT_TO_LINE_END.sub("", text)))


@dataclass(frozen=True)
class NamedQuery:
    name: str
    text: str
    path: Path
    signature: Signature | None = None  # None only for ad-hoc statements built by tests

    @cached_property
    def serial_text(self) -> str:
        """The text without its locks, for a store that runs writes one at a time (derived once)."""
        return without_locks(self.text)

    @cached_property
    def falkordb_text(self) -> str:
        """The text FalkorDB runs: `serial_text` in FalkorDB's dialect (module docstring, "Dialect"),
        as sent (module docstring, "Sent text")."""
        return sent_form(self.name, falkordb_dialect(self.serial_text))

    @cached_property
    def neo4j_text(self) -> str:
        """The text Neo4j runs: `text` as sent (module docstring, "Sent text")."""
        return sent_form(self.name, self.text)

    @cached_property
    def parameters(self) -> frozenset[str]:
        """The $parameters the text uses (the gateway requires exactly these). Derived once: the
        gateway asks on every statement, and a placement statement's ~15 KB text took ~50-60 us
        to scan each time."""
        return parameters_in(self.text)

    @property
    def writes(self) -> bool:
        """Declared, never guessed: a query is a write when its header says // @write."""
        return self.signature is not None and self.signature.mode == "write"


class UnknownQueryError(KeyError):
    pass


class QueryRegistry:
    """The queries under `root`, and under each of `extra` (tests add their own this way)."""

    def __init__(self, root: Path, *extra: Path) -> None:
        self.root = root
        self.extra = extra
        self._queries: dict[str, NamedQuery] = {}
        fragments = {
            p.stem: p.read_text(encoding="utf-8").strip() for p in sorted((root / "fragments").glob("*.cypher"))
        }
        for stem, fragment in fragments.items():  # each file once: includes are whole lines
            refuse_strings_across_lines(fragment, f"fragments/{stem}")
        for base in (root, *extra):
            self._load(base, fragments)

    def _load(self, root: Path, fragments: dict[str, str]) -> None:
        for path in sorted(root.rglob("*.cypher")):
            name = path.relative_to(root).with_suffix("").as_posix()
            if name.startswith("fragments/"):
                continue
            if name in self._queries:
                raise ValueError(f"two queries named {name} ({self._queries[name].path}, {path})")
            own = path.read_text(encoding="utf-8").strip()
            refuse_strings_across_lines(own, name)
            text = _expand(own, fragments, name)
            if not text:
                raise ValueError(f"query {name} is empty")
            query = NamedQuery(name, text, path, parse_signature(own, name))
            query.falkordb_text  # noqa: B018 - a scope clause FalkorDB cannot read fails here, at load
            self._queries[name] = query
            scan = _scan_form(query, own, fragments)
            if scan is not None:
                if scan.name in self._queries or (root / f"{scan.name}.cypher").exists():
                    raise ValueError(f"query {name}: its derived scan form {scan.name} is also a file")
                self._queries[scan.name] = scan

    def __getitem__(self, name: str) -> NamedQuery:
        try:
            return self._queries[name]
        except KeyError:
            raise UnknownQueryError(f"no query named {name!r} under {self.root}") from None

    def __iter__(self) -> Iterator[NamedQuery]:
        return iter(self._queries.values())

    def names(self) -> list[str]:
        return list(self._queries)

    def migrations(self) -> list[tuple[int, NamedQuery]]:
        """(N, query) pairs in order; migration N may be several files, NNNN_1_..., NNNN_2_..."""
        out: list[tuple[int, NamedQuery]] = []
        for q in self._queries.values():
            if q.name.startswith("migrations/"):
                number = int(q.name.split("/", 1)[1].split("_", 1)[0])
                out.append((number, q))
        return sorted(out, key=lambda item: (item[0], item[1].name))


_INCLUDE = re.compile(r"^//@include\s+(\S+)\s*$", re.MULTILINE)

SCAN_FORMS = {
    "placement_free_blocks": "placement_free_blocks_scan",
    "placement_leaf_page": "placement_leaf_page_scan",
    "placement_domain_page": "placement_domain_page_scan",
    "reserve_batch_candidates": "reserve_batch_candidates_scan",
}
"""Fragments read by index seeks, each with its twin read by a scan (module docstring, "Scan forms")."""
SCAN_SUFFIX = "_scan"
_UNUSED_PARAM_LINE = re.compile(r"^//\s*@param\s+\$?([A-Za-z_][A-Za-z0-9_]*)\b[^\n]*\n", re.MULTILINE)


def _scan_form(query: NamedQuery, own: str, fragments: dict[str, str]) -> NamedQuery | None:
    """`query`'s scan form, or None when its own text includes no fragment of SCAN_FORMS (only a
    query's own includes are swapped, never a fragment's; migrations have none)."""

    def twin(m: re.Match[str]) -> str:
        return f"//@include {SCAN_FORMS.get(m.group(1), m.group(1))}"

    swapped = _INCLUDE.sub(twin, own)
    if swapped == own or query.signature is None or query.name.startswith("migrations/"):
        return None
    name = f"{query.name}{SCAN_SUFFIX}"
    text = _expand(swapped, fragments, name)  # the header lines are the query's own: fragments have none
    used = parameters_in(text)
    text = _UNUSED_PARAM_LINE.sub(lambda m: m.group(0) if m.group(1) in used else "", text)
    params = {k: v for k, v in query.signature.params.items() if k in used}
    scan = NamedQuery(name, text, query.path, Signature(query.signature.mode, params, query.signature.row))
    scan.falkordb_text  # noqa: B018 - as for the query itself: fails at load
    return scan


_LOCK_LINE = re.compile(r"^[^\n]*//@lock[ \t]*$\n?", re.MULTILINE)
_LOCK_BLOCK = re.compile(r"^//@lock-begin[ \t]*\n.*?^//@lock-end[ \t]*\n?", re.MULTILINE | re.DOTALL)


def without_locks(text: str) -> str:
    """`text` without its lock lines and lock blocks (module docstring, "Locks")."""
    out = _LOCK_LINE.sub("", _LOCK_BLOCK.sub("", text))
    if "//@lock-begin" in out or "//@lock-end" in out:
        raise ValueError("unbalanced //@lock-begin / //@lock-end")
    return out


def without_comment_lines(text: str) -> str:
    """`text` without the lines that hold only a comment (sound for the texts the registry loads:
    `refuse_strings_across_lines`)."""
    return _COMMENT_ONLY_LINE.sub("", text)


def sent_form(name: str, text: str) -> str:
    """`text` as a store is sent it: without its comment-only lines, under one naming the query
    (module docstring, "Sent text")."""
    return f"// {name}\n" + without_comment_lines(text)


def refuse_strings_across_lines(text: str, name: str) -> None:
    """Raise ValueError where a string literal of `text` (quotes, or backticks) spans lines: a
    line of it that looks like a comment would be left out of the sent text. One regex pass (a
    scan character by character was ~40% of the registry's load); a quote no one-line literal
    closes is the error."""
    for m in _ONE_LINE_TOKEN.finditer(text):
        if m.group() in _QUOTES:
            raise ValueError(f"query {name}: a string literal spans lines (write it on one line, or pass it)")


# A scope clause on a line of its own (the way queries/ writes them): a comment or a string that
# mentions one is never rewritten.
_SCOPE_CLAUSE = re.compile(r"^([ \t]*)CALL[ \t]*\(([^)\n]*)\)[ \t]*\{[ \t]*$", re.MULTILINE | re.IGNORECASE)


def falkordb_dialect(text: str) -> str:
    """`text` with each subquery's scope clause as the importing WITH FalkorDB reads (module
    docstring, "Dialect")."""

    def scope(m: re.Match[str]) -> str:
        indent, names = m.group(1), m.group(2).strip()
        if names == "*":
            raise ValueError("CALL (*) { ... } has no FalkorDB form: name the variables the subquery imports")
        return f"{indent}CALL {{" + (f"\n{indent}WITH {names}" if names else "")

    return _SCOPE_CLAUSE.sub(scope, text)


def _expand(text: str, fragments: dict[str, str], name: str, depth: int = 0) -> str:
    """The text with each ``//@include`` replaced by its fragment, fragments' own includes too
    (a few levels: a deeper chain is a cycle)."""
    if depth > 4:
        raise ValueError(f"query {name}: fragments include each other more than 4 levels deep")

    def fragment(m: re.Match[str]) -> str:
        if m.group(1) not in fragments:
            raise ValueError(f"query {name} includes unknown fragment {m.group(1)!r}")
        return _expand(fragments[m.group(1)], fragments, name, depth + 1)

    return _INCLUDE.sub(fragment, text)


@cache
def default_registry() -> QueryRegistry:
    return QueryRegistry(resource_dir("queries"))
