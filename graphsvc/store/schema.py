"""The declared graph model (``schema/graph.toml``) and what is derived from it."""

from __future__ import annotations

import tomllib
import zlib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from graphsvc.resources import resource_dir

PROPERTY_TYPES = frozenset({"string", "int", "float", "bool", "list<string>", "list<int>"})


@dataclass(frozen=True)
class NodeType:
    label: str
    key: str
    properties: dict[str, str]
    required: tuple[str, ...]
    indexes: tuple[str, ...]
    unique: tuple[str, ...] = ()
    composite_indexes: tuple[tuple[str, ...], ...] = ()
    # Every reservation writes these nodes: no unique constraint on FalkorDB (graph.toml says why).
    written_per_reservation: bool = False


@dataclass(frozen=True)
class RelType:
    name: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphSchema:
    version: int
    nodes: dict[str, NodeType]
    relationships: dict[str, RelType]

    @property
    def property_keys(self) -> list[str]:
        keys: set[str] = set()
        for n in self.nodes.values():
            keys.update(n.properties)
        for r in self.relationships.values():
            keys.update(r.properties)
        return sorted(keys)

    def neo4j_ddl(self) -> list[str]:
        """Statements that make a Neo4j 5 database match the schema; safe to repeat."""
        return [statement for _, _, statement in self.neo4j_ddl_named()]

    def neo4j_ddl_named(self) -> list[tuple[str, str, str]]:
        """`neo4j_ddl` as (kind, name, statement): kind "constraint" or "index", the name each
        statement creates (so a store can skip what it already has)."""
        out: list[tuple[str, str, str]] = []
        for n in self.nodes.values():
            low = n.label.lower()
            for prop in (n.key, *n.unique):
                name = f"{low}_{prop}_unique"
                out.append(
                    (
                        "constraint",
                        name,
                        f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{n.label}) REQUIRE n.{prop} IS UNIQUE",
                    )
                )
            for props in [(prop,) for prop in n.indexes] + [tuple(props) for props in n.composite_indexes]:
                name = f"{low}_{'_'.join(props)}"
                on = ", ".join(f"n.{p}" for p in props)
                out.append(("index", name, f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{n.label}) ON ({on})"))
        return out

    def falkordb_indexes(self) -> list[tuple[str, str]]:
        """(label, property) pairs needing an exact-match index; keys first (constraints need them).
        A composite index is its properties' single indexes here: FalkorDB answers a predicate on
        several indexed properties of one label in one index scan."""
        pairs: list[tuple[str, str]] = []
        for n in self.nodes.values():
            pairs.append((n.label, n.key))
            pairs.extend((n.label, p) for p in n.unique)
            pairs.extend((n.label, p) for p in n.indexes)
            pairs.extend((n.label, p) for props in n.composite_indexes for p in props)
        return list(dict.fromkeys(pairs))

    def unique_keys(self) -> list[tuple[str, str]]:
        """Every (label, property) declared unique: what Neo4j constrains."""
        return [(n.label, p) for n in self.nodes.values() for p in (n.key, *n.unique)]

    def falkordb_unique_keys(self) -> list[tuple[str, str]]:
        """The unique keys FalkorDB constrains: none of a label every reservation writes, whose
        constraint checks walk the stale index entries each write leaves (graph.toml)."""
        return [(n.label, p) for n in self.nodes.values() if not n.written_per_reservation for p in (n.key, *n.unique)]


def load_schema(path: Path | None = None) -> GraphSchema:
    path = path or resource_dir("schema") / "graph.toml"
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    nodes: dict[str, NodeType] = {}
    for label, spec in raw["nodes"].items():
        props = dict(spec.get("properties", {}))
        key = spec["key"]
        _check_props(label, props)
        required = tuple(spec.get("required", [key]))
        indexes = tuple(spec.get("indexes", []))
        unique = tuple(spec.get("unique", []))
        composite = tuple(tuple(props) for props in spec.get("composite_indexes", []))
        for p in (key, *required, *indexes, *unique, *(p for props in composite for p in props)):
            if p not in props:
                raise ValueError(f"schema: {label}.{p} is used but not declared")
        hot = spec.get("written_per_reservation", False)
        if not isinstance(hot, bool):
            raise ValueError(f"schema: {label}.written_per_reservation must be true or false")
        nodes[label] = NodeType(label, key, props, required, indexes, unique, composite, hot)
    rels: dict[str, RelType] = {}
    for name, spec in raw.get("relationships", {}).items():
        props = dict(spec.get("properties", {}))
        _check_props(name, props)
        ends = (*spec["from"], *spec["to"])
        unknown = [lbl for lbl in ends if lbl not in nodes]
        if unknown:
            raise ValueError(f"schema: relationship {name} names unknown labels {unknown}")
        rels[name] = RelType(name, tuple(spec["from"]), tuple(spec["to"]), props)
    return GraphSchema(int(raw["graph_version"]), nodes, rels)


def _check_props(owner: str, props: dict[str, str]) -> None:
    for prop, typ in props.items():
        if typ not in PROPERTY_TYPES:
            raise ValueError(f"schema: {owner}.{prop} has unknown type {typ!r}")


@cache
def graph_schema() -> GraphSchema:
    return load_schema()


GRAPH_VERSION = graph_schema().version

# How many tie buckets units are spread over (`NVLinkDomain.tie_bucket`, `Host.tie_bucket`), numbered
# 1..TIE_BUCKETS. Placement passes it to its statements as `$tie_buckets`; changing it needs a
# migration that re-buckets every unit.
TIE_BUCKETS = 16


def tie_bucket(key: str) -> int:
    """A unit's static tie bucket, 1..TIE_BUCKETS: a stable hash of its key, the same on every
    ingest and store, so one graph gives one placement order (a Python hash is salted per process).

    Never 0: FalkorDB 4.16, loading a graph from an RDB a live rewrite of its log wrote (the
    store rewrites it whenever it outgrows its base by a quarter), leaves index entries whose value
    is 0, 0.0 or false out of its range indexes, so after such a restart an equality seek for
    bucket 0 found no unit, and placement passed over every sixteenth NVLink domain (docs/store.md,
    graph v6)."""
    return zlib.crc32(key.encode()) % TIE_BUCKETS + 1
