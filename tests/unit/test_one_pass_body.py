"""`strict_json.parse_model`, the one-pass parse of a body that is one model (#15: ingest's CPU):
whatever it accepts, the strict path (`loads`, then the model's validation) accepts as the same
model; whatever it does not, it leaves to the strict path (None), so every answer but a valid
body's is the strict path's."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from fastapi.routing import APIRoute
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from topo_facts import HostFacts

from graphsvc.api import rest, rest_reservations, sites_rest
from graphsvc.api.strict_json import InvalidJSON, loads, parse_model
from graphsvc.api.strict_routes import one_body_model
from tests.helpers import as_json, h100

FACTS = h100("one-pass")
BASE = as_json(FACTS)
BODY = json.dumps(BASE).encode()


def strict_path(model: type[BaseModel], data: bytes) -> BaseModel | None:
    """The answer without the shortcut: the model, or None for a 400 or a 422."""
    try:
        return TypeAdapter(model).validate_python(loads(data))
    except (InvalidJSON, ValidationError, ValueError):  # ValueError: json's JSONDecodeError
        return None


def with_raw(key: str, raw: str) -> bytes:
    """The document's JSON text with one top-level value replaced by raw JSON text."""
    old = json.dumps({key: BASE[key]})[1:-1]
    return json.dumps(BASE).replace(old, f'"{key}": {raw}', 1).encode()


def test_a_valid_document_is_the_model_the_strict_path_gives() -> None:
    assert parse_model(HostFacts, BODY) == strict_path(HostFacts, BODY) == FACTS


@pytest.mark.parametrize(
    "body",
    [
        with_raw("collected_at", "NaN"),
        with_raw("collected_at", "-Infinity"),
        with_raw("cluster", '"NaN-cluster"'),  # valid, but the strict path judges it
        with_raw("cluster", '"bad\\ud800"'),
        with_raw("cluster", '"emoji-\\ud83d\\ude00"'),
        with_raw("cluster", '"a\\uDBFFb"'),
        b"\xef\xbb\xbf" + BODY,  # a UTF-8 byte order mark
        BODY.replace(b'"one-pass"', b'"one-\xffpass"', 1),  # not UTF-8
        with_raw("cluster", "1"),  # a 422
        b"[" * 300 + b"]" * 300,
        b"",
        b"{",
    ],
    ids=["nan", "-inf", "nan-in-string", "lone", "pair", "upper", "bom", "not-utf8", "invalid", "deep", "empty", "cut"],
)
def test_what_the_strict_path_must_judge_is_left_to_it(body: bytes) -> None:
    assert parse_model(HostFacts, body) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(sorted(BASE["gpus"][0])), value=json_values, index=st.integers(0, 7))
def test_a_corrupted_gpu_field_is_judged_alike(field: str, value: Any, index: int) -> None:
    doc = json.loads(BODY)
    doc["gpus"][index][field] = value
    body = json.dumps(doc).encode()  # NaN and Infinity written as Python writes them
    fast = parse_model(HostFacts, body)
    assert fast is None or fast == strict_path(HostFacts, body)


def test_byte_edits_of_the_text_are_judged_alike() -> None:
    """Random edits of the JSON text (seeded): a byte deleted, doubled or replaced by one that
    matters to a parser. Whatever the shortcut accepts, the strict path accepts as the same."""
    rng = random.Random(15)
    tokens = [b",", b"]", b"}", b'"', b"\\", b"0", b"1", b".", b"e", b"-", b"+", b" ", b"\t", b"\x00", b"n", b"\x7f"]
    accepted = 0
    for _ in range(400):
        at = rng.randrange(len(BODY))
        edit = rng.choice(["delete", "double", "replace"])
        if edit == "delete":
            body = BODY[:at] + BODY[at + 1 :]
        elif edit == "double":
            body = BODY[: at + 1] + BODY[at:]
        else:
            body = BODY[:at] + rng.choice(tokens) + BODY[at + 1 :]
        fast = parse_model(HostFacts, body)
        if fast is not None:
            accepted += 1
            assert fast == strict_path(HostFacts, body), body[max(0, at - 40) : at + 40]
    assert accepted  # some edits (whitespace, digits of a count) leave a valid document


def test_every_strict_route_with_one_body_model_may_use_the_shortcut() -> None:
    """Each is a model FastAPI passes through unchanged, and none is strict where JSON and Python
    validation differ (a strict datetime takes a string only from JSON, a strict enum its value
    only from JSON): strict fields are ints, bools and strings, which both read alike."""
    routes = [*rest.router.routes, *sites_rest.router.routes, *rest_reservations.router.routes]
    models = {
        f"{r.path} {','.join(sorted(r.methods or ()))}": one_body_model(r) for r in routes if isinstance(r, APIRoute)
    }
    bodies = {path: model for path, model in models.items() if model is not None}
    assert set(bodies) == {
        "/v1/hosts/{name}/facts PUT",
        "/v1/hosts/{name}/metrics PUT",
        "/v1/fabric PUT",
        "/v1/sites PUT",
        "/v1/prices PUT",
        "/v1/place POST",
        "/v1/reservations POST",
    }

    def strict_types(schema: object) -> set[str]:
        if isinstance(schema, dict):
            own = {str(schema.get("type"))} if schema.get("strict") is True else set()
            return own.union(*(strict_types(v) for v in schema.values()))
        if isinstance(schema, list):
            return set().union(*(strict_types(v) for v in schema))
        return set()

    for model in bodies.values():
        assert strict_types(model.__pydantic_core_schema__) <= {"int", "bool", "str"}, model
        assert model.model_config.get("strict") is not True, model


def test_a_body_of_many_letters_is_left_to_the_strict_path_after_a_bounded_look() -> None:
    from graphsvc.api.strict_json import _MAX_LETTERS, _may_hold_what_loads_refuses

    assert not _may_hold_what_loads_refuses(BODY)
    assert not _may_hold_what_loads_refuses(b'["' + b"N" * _MAX_LETTERS + b'"]')
    assert _may_hold_what_loads_refuses(b'["' + b"N" * (_MAX_LETTERS + 1) + b'"]')
    assert _may_hold_what_loads_refuses(b'["' + b"I" * 200 + b"N" * 100 + b'"]')
