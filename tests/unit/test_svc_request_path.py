"""The reserve and release path's shortcuts (stop 66) answer as the code they replaced."""

from __future__ import annotations

from dataclasses import MISSING, fields, replace
from typing import Any

import pytest

from graphsvc.api.metrics import Metrics
from graphsvc.placement.capabilities import CapabilityNeeds
from graphsvc.placement.request import (
    Packing,
    PlacementRequest,
    parse_request,
)
from graphsvc.reservations.fastpath import FAST_PATH_FIELDS, fast_path_mode
from graphsvc.reservations.rows import as_reservation_rows


def _others_at_default(req: PlacementRequest) -> bool:
    """The rule as fast_path_mode wrote it before: every field outside FAST_PATH_FIELDS, one by
    one, against its default (a factory's value made anew)."""
    for f in fields(req):
        if f.name in FAST_PATH_FIELDS:
            continue
        if f.default is not MISSING:
            if getattr(req, f.name) != f.default:
                return False
        elif f.default_factory is MISSING or getattr(req, f.name) != f.default_factory():
            return False
    return True


CHANGED: dict[str, Any] = {
    "min_memory_gib": 80.0,
    "rail_aligned": True,
    "gpu_nic_affinity": True,
    "max_temperature_c": 70.0,
    "exclude_unhealthy": False,
    "exclusive": True,
    "capabilities": CapabilityNeeds(fp8=True),
    "prefer_hosts": ("h1",),
    "packing": Packing.SPREAD,
    "mig_profile": "3g.40gb",
}


def test_every_field_outside_the_fast_path_is_covered() -> None:
    outside = {f.name for f in fields(PlacementRequest)} - FAST_PATH_FIELDS - {"gpus"}
    assert outside == set(CHANGED)  # a field added to PlacementRequest needs a case here


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_field_off_its_default_leaves_the_fast_path(name: str) -> None:
    base = parse_request("4xH100 nvlink=full-mesh")
    assert fast_path_mode(base) == "full-mesh" and _others_at_default(base)
    changed = replace(base, **{name: CHANGED[name]})
    assert not _others_at_default(changed)
    assert fast_path_mode(changed) is None


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("8xH100 nvlink=full-mesh", "full-mesh"), ("4xH100 nvlink=any", "any"), ("1xH100", "none"),
        ("3xL40S", "none"), ("2xH100 same-domain", "any"), ("8xH100 ib-hops<=1", "none"),
        ("8xH100 exclude=h1,h2 limit=5", "none"), ("8xH100 per-host=8", "none"),
        ("4xH100 site=a", None), ("16xH100 per-host=8", None), ("8xH100 mem>=80", None),
        ("8xH100 cc>=9.0", None), ("8xH100 packing=spread", None), ("8xH100 exclusive", None),
        ("2x 3g.40gb", None), ("200xH100", None),
    ],
)  # fmt: skip
def test_modes_as_before(text: str, mode: str | None) -> None:
    """The modes fast_path_mode answered before stop 66 (a table: None is the general search)."""
    assert fast_path_mode(parse_request(text)) == mode


def test_rows_fill_only_the_gpus_of_removed_hosts() -> None:
    complete = {"uuid": "u1", "index": 0, "model": "H100", "host": "h1", "rack": None, "held": True}
    removed = {"uuid": "u2", "index": None, "model": None, "host": None, "held": False}
    rows: Any = [{"reservation": {"id": "r"}, "gpus": [complete, removed]}, {"reservation": {}, "gpus": []}]
    [out] = as_reservation_rows(rows)
    assert out["gpus"] == [complete, {"uuid": "u2", "index": -1, "model": "", "host": "", "held": False}]
    assert removed["index"] is None  # the row read is not changed


def test_kept_children_count_as_labels_does() -> None:
    metrics = Metrics()
    for _ in range(3):
        metrics.observe_request("POST /v1/reservations", 0.002)
        metrics.observe_query("reservations/release_batch", 0.004)
    metrics.request_seconds.labels("POST /v1/reservations").observe(0.002)
    count = metrics.registry.get_sample_value
    assert count("graphsvc_request_seconds_count", {"operation": "POST /v1/reservations"}) == 4
    assert count("graphsvc_store_query_seconds_count", {"query": "reservations/release_batch"}) == 3
