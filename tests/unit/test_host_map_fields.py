"""The host-map fragment and the topology statement list each GPU's fields in the order Python
reads them by (graphsvc.placement.model: HOST_MAP_LIVE_FIELDS, HOST_TOPOLOGY_GPU_FIELDS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphsvc.placement.model import HOST_MAP_LIVE_FIELDS, HOST_TOPOLOGY_GPU_FIELDS, topology_gpu

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
    entry: dict[str, object] = {
        "uuid": "g0", "index": 3, "model": "H100", "memory_mib": 81559, "domain": "d0", "domain_kind": "nvswitch",
        "nic": "mlx5_0", "rail": 0, "nic_rate_gbps": 400.0, "nic_share_rate_gbps": 360.0,
        "via": "pcie-switch", "leaf": "leaf-r0",
        "nic_state": "active", "nvswitch_gbps": 450.0, "mig_mode": False, "peers": [["g1", 50.0]], "nic_errors": 2,
    }  # fmt: skip
    live: dict[str, object] = {
        "uuid": "g0", "state": "reserved", "health": "degraded", "temperature_c": 61.0, "utilization_pct": 3.0,
        "lease_expires_at": 5.0, "memory_used_mib": 512, "nvlink_errors": 4, "xid_errors": 1,
    }  # fmt: skip
    kept = topology_gpu("h0", [entry[f] for f in HOST_TOPOLOGY_GPU_FIELDS])
    gpu = kept.with_live([live[f] for f in HOST_MAP_LIVE_FIELDS])
    # The topology as kept (every field of the entry lands where from_row puts it) ...
    assert (gpu.host, gpu.index, gpu.model, gpu.memory_mib, gpu.nvlink_domain, gpu.domain_kind) == (
        "h0",
        3,
        "H100",
        81559,
        "d0",
        "nvswitch",
    )
    assert (gpu.nic, gpu.rail, gpu.nic_rate_gbps, gpu.via, gpu.leaf, gpu.nic_state) == (
        "mlx5_0",
        0,
        400.0,
        "pcie-switch",
        "leaf-r0",
        "active",
    )
    assert (gpu.switch_gbps, gpu.mig_mode, gpu.direct, gpu.nic_errors) == (450.0, False, {"g1": 50.0}, 2)
    # ... with the live fields over it,
    assert (gpu.uuid, gpu.state, gpu.health, gpu.temperature_c, gpu.utilization_pct) == (
        "g0",
        "reserved",
        "degraded",
        61.0,
        3.0,
    )
    assert (gpu.memory_used_mib, gpu.nvlink_errors, gpu.xid_errors) == (512, 4, 1)
    # ... and the kept GPU unchanged, its peers not shared with the copy.
    assert (kept.state, kept.health, kept.xid_errors) == ("free", None, 0)
    gpu.direct["g2"] = 1.0
    assert kept.direct == {"g1": 50.0}
