"""The layering docs/architecture.md describes, checked on the source (no store needed).

- `graphsvc.api` is transport only: it imports nothing from `graphsvc.store` and runs no
  named query; it calls `graphsvc.services` (read models, ingest, reservations, exports).
- `graphsvc.api.graphql` does not import the rest of `graphsvc.api` (no api <-> api.graphql cycle).
- A host's insides are read in one place: the host topology queries are named only by
  `graphsvc.read.hosts`, which GraphQL, REST, NCCL, gres and DRA all go through.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "graphsvc"
HOST_QUERIES = ("host_detail", "host_layout", "host_nvlink_edges", "host_gpu_nics")


def modules(under: str) -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py"))


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def query_calls(path: Path) -> list[str]:
    """Named queries run by the module: `x.read("name", ...)` / `x.write("name", ...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("read", "write")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


def test_api_does_not_import_the_store() -> None:
    offenders = {
        str(p.relative_to(PACKAGE)): sorted(n for n in imported(p) if n.startswith("graphsvc.store"))
        for p in modules("api")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_api_runs_no_named_query() -> None:
    offenders = {str(p.relative_to(PACKAGE)): query_calls(p) for p in modules("api")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_api_graphql_does_not_import_the_rest_of_api() -> None:
    offenders = {
        str(p.relative_to(PACKAGE)): sorted(
            n for n in imported(p) if n.startswith("graphsvc.api") and not n.startswith("graphsvc.api.graphql")
        )
        for p in modules("api/graphql")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_host_topology_is_read_in_one_place() -> None:
    names = "|".join(HOST_QUERIES)
    pattern = re.compile(rf"""["']({names})["']""")
    users = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))
    )
    assert users == ["read/hosts.py"]


def test_placement_and_reservations_read_typed_rows() -> None:
    """Rows are TypedDicts declared next to their queries' `@row` headers, never untyped maps."""
    root = Path(__file__).resolve().parents[2] / "graphsvc"
    untyped = [
        f"{path.relative_to(root)}:{n}"
        for package in ("placement", "reservations")
        for path in sorted((root / package).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if "dict[str, Any]" in line
    ]
    assert untyped == []
