"""docs/architecture.md's glossary names every type of the exported GraphQL schema."""

from __future__ import annotations

import re
from pathlib import Path

from graphql import build_schema

from graphsvc.api.graphql.schema import make_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
BUILTIN = {"String", "Int", "Float", "Boolean", "ID"}


def glossary() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Glossary")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_glossary_covers_every_schema_type() -> None:
    sdl = make_schema(dev=True).as_str()
    names = {n for n in build_schema(sdl).type_map if not n.startswith("__")} - BUILTIN
    mentioned = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", glossary()))
    assert sorted(names - mentioned) == []
