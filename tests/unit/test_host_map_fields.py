"""The host-map fragment lists each GPU's fields in the order Python reads them by."""

from __future__ import annotations

import re
from pathlib import Path

from graphsvc.placement.model import HOST_MAP_GPU_FIELDS, gpu_map

FRAGMENT = Path(__file__).resolve().parents[2] / "queries" / "fragments" / "placement_host_maps.cypher"


def documented_fields() -> list[str]:
    """The field names after `// gpu:` in the fragment's header, over its continuation lines."""
    header = FRAGMENT.read_text().split("// gpu:", 1)[1].split("\n// (", 1)[0]
    return [f for f in re.split(r"[\s,/]+", header) if f]


def listed_expressions() -> list[str]:
    """The expressions of the fragment's GPU list, split at its top-level commas."""
    text = FRAGMENT.read_text()
    body = text.split("] END) AS map_gpus", 1)[0].rsplit("THEN null ELSE [", 1)[1]
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


def test_the_fragment_and_python_name_the_same_fields_in_the_same_order() -> None:
    assert documented_fields() == list(HOST_MAP_GPU_FIELDS)
    expressions = listed_expressions()
    assert len(expressions) == len(HOST_MAP_GPU_FIELDS)
    # Where an expression reads a property of the same name, it must sit at that field's place.
    for field, expression in zip(HOST_MAP_GPU_FIELDS, expressions, strict=True):
        plain = re.fullmatch(r"map_\w+\.(\w+)", expression)
        if plain and field not in {"domain", "domain_kind", "nic", "nic_rate_gbps", "nic_state"}:
            assert plain.group(1) == field, (field, expression)


def test_an_entry_reads_as_the_fields_it_names() -> None:
    entry: list[object] = [f"value of {f}" for f in HOST_MAP_GPU_FIELDS]
    row = gpu_map(entry)
    assert row["uuid"] == "value of uuid" and row["nic_errors"] == "value of nic_errors"  # type: ignore[comparison-overlap]
