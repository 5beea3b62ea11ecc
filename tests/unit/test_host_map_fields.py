"""The host-map fragment and the topology statement list each GPU's fields in the order Python
reads them by (graphsvc.placement.model: HOST_MAP_LIVE_FIELDS, HOST_TOPOLOGY_GPU_FIELDS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphsvc.placement.model import HOST_MAP_LIVE_FIELDS, HOST_TOPOLOGY_GPU_FIELDS, gpu_map

QUERIES = Path(__file__).resolve().parents[2] / "queries"
# Each text, where its GPU list ends, and the fields Python names.
LISTS = [
    (QUERIES / "fragments" / "placement_host_maps.cypher", "] END) AS map_gpus", HOST_MAP_LIVE_FIELDS),
    (QUERIES / "placement_host_topology.cypher", "] END) AS gpus", HOST_TOPOLOGY_GPU_FIELDS),
]
# Fields read from a property of another name (the domain's uuid, the NIC's name, ...).
RENAMED = {"domain", "domain_kind", "nic", "nic_rate_gbps", "nic_state"}


def documented_fields(path: Path) -> list[str]:
    """The field names after `// gpu:` in the text's header, over its continuation lines."""
    header = path.read_text().split("// gpu:", 1)[1].split("\n// (", 1)[0]
    return [f for f in re.split(r"[\s,/]+", header) if f]


def listed_expressions(path: Path, end: str) -> list[str]:
    """The expressions of the text's GPU list, split at its top-level commas."""
    body = path.read_text().split(end, 1)[0].rsplit("THEN null ELSE [", 1)[1]
    parts, depth, current = [], 0, ""
    for ch in body:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [*parts, current.strip()]


@pytest.mark.parametrize(("path", "end", "fields"), LISTS, ids=lambda v: v.stem if isinstance(v, Path) else "")
def test_the_cypher_and_python_name_the_same_fields_in_the_same_order(
    path: Path, end: str, fields: tuple[str, ...]
) -> None:
    assert documented_fields(path) == list(fields)
    expressions = listed_expressions(path, end)
    assert len(expressions) == len(fields)
    # Where an expression reads a property of the same name, it must sit at that field's place.
    for field, expression in zip(fields, expressions, strict=True):
        plain = re.fullmatch(r"(?:\w+\.)?(\w+)", expression)
        if "." in expression and plain and field not in RENAMED:
            assert plain.group(1) == field, (field, expression)


def test_a_free_gpu_reads_as_its_topology_with_its_live_fields_over_it() -> None:
    topology = tuple(f"kept {f}" for f in HOST_TOPOLOGY_GPU_FIELDS)
    live: list[object] = [f"now {f}" for f in HOST_MAP_LIVE_FIELDS]
    row = gpu_map(topology, live)
    assert row["uuid"] == "now uuid"  # both name it: the live entry's
    assert row["nic_errors"] == "kept nic_errors"  # type: ignore[comparison-overlap]
    assert row["xid_errors"] == "now xid_errors"  # type: ignore[comparison-overlap]
    assert set(row) == set(HOST_TOPOLOGY_GPU_FIELDS) | set(HOST_MAP_LIVE_FIELDS)
