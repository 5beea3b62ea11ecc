"""Runs Neo4j's own Cypher linter (``@neo4j-cypher/language-support``) from the tests.

The npm package is installed on first use with ``npm ci`` from the committed lock
file in ``tools/cypher-lint``. The label, relationship-type and property vocabulary
comes from ``schema/graph.toml``, so a query naming something the schema does not
declare gets a warning, and warnings fail the test like errors do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphsvc.store.schema import graph_schema

LINT_DIR = Path(__file__).resolve().parents[1] / "tools" / "cypher-lint"
PACKAGE = LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support"


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    line: int
    column: int


def ensure_linter() -> str:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are required for the Cypher lint test in CI")
        pytest.skip("node/npm not installed: cannot run Neo4j's Cypher linter here")
    if not PACKAGE.is_dir():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=LINT_DIR, check=True, timeout=600
        )
    return node


def lint(queries: dict[str, str]) -> dict[str, list[Diagnostic]]:
    node = ensure_linter()
    schema = graph_schema()
    payload = {
        "schema": {
            "labels": sorted(schema.nodes),
            "relationshipTypes": sorted(schema.relationships),
            "propertyKeys": schema.property_keys,
        },
        "queries": [{"name": n, "text": t} for n, t in queries.items()],
    }
    proc = subprocess.run(
        [node, "lint.mjs"],
        cwd=LINT_DIR,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        # A guard against a hung linter, not a speed bound: ~1 minute alone, and past 300 s on a
        # machine at load 25 (a CI run beside eight test sessions) with every query to lint.
        timeout=1200,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"cypher linter failed: {proc.stderr[-2000:]}")
    return {item["name"]: [Diagnostic(**d) for d in item["diagnostics"]] for item in json.loads(proc.stdout)}
