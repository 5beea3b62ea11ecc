"""Hypothesis on the fact model: any input is either valid facts or a ValidationError naming
fields, never another exception; valid facts survive a JSON round trip unchanged."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from topo_facts import HostFacts, HostMetrics

from tests.helpers import as_json, h100

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=25,
)
BASE = as_json(h100())
FIELDS = sorted(BASE)
GPU_FIELDS = sorted(BASE["gpus"][0])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([*FIELDS, "surprise"]), json_values, max_size=8))
def test_arbitrary_documents_validate_or_fail_cleanly(doc: dict[str, Any]) -> None:
    for model in (HostFacts, HostMetrics):
        try:
            model.model_validate(doc)
        except ValidationError as err:
            problems = err.errors()
            assert problems


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(GPU_FIELDS), value=json_values, index=st.integers(0, 7))
def test_one_corrupted_gpu_field_is_caught_or_harmless(field: str, value: Any, index: int) -> None:
    doc = json.loads(json.dumps(BASE))
    doc["gpus"][index][field] = value
    try:
        facts = HostFacts.model_validate(doc)
    except ValidationError as err:
        problems = err.errors()

        # Field errors carry a loc; cross-field checks (duplicate index...) name the path in the
        # message: a duplicate is named where it is found, the corrupted GPU's or the other's; a
        # changed uuid leaves the references to the old one (NIC affinity, NVLink peers) unknown.
        def named(msg: str) -> bool:
            return bool(re.search(rf"gpus\[\d+\]\.{field}\b", msg)) or (field == "uuid" and "unknown GPU" in msg)

        assert all(e["loc"] or named(e["msg"]) for e in problems), problems
        return
    again = HostFacts.model_validate_json(facts.model_dump_json())
    assert again == facts
