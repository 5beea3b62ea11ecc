"""A key twice in one JSON object is refused at any depth: Python's and pydantic's parsers kept
the last, so a scheduler sending `{"request": "8xH100", "request": "1xH100"}` got one GPU and
no error. REST answers 422 naming the key's path (the shape of every other 422), on both of a
one-pass route's ways (graphsvc/api/one_pass_route.py); GraphQL answers 400. Both stores (the
app of each; a refused body never reaches the store)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from topo_facts import HostFacts

from graphsvc.api import strict_json
from graphsvc.api.rest_reservations import ReserveBody
from tests.helpers import as_json, h100
from tests.strict_json_helpers import short_way_taken

SHORT = {"content-type": "application/json"}  # a one-pass route's short way
FASTAPI_WAY = {"content-type": "application/json; charset=utf-8"}


def facts_text(host: str) -> str:
    return json.dumps(as_json(h100(host)))


def gpu0_uuid_twice(host: str) -> str:
    """Valid host facts whose first GPU names its uuid twice (the last a real GPU's)."""
    text = facts_text(host)
    assert text.count('"uuid": "GPU-') >= 8
    return text.replace('"uuid": "GPU-', '"uuid": "GPU-first", "uuid": "GPU-', 1)


# method, path, body text with a repeated key, the repeated key's field in the 422
ROUTES: list[tuple[str, str, str, str]] = [
    ("POST", "/v1/place", '{"request": "8xH100", "request": "1xH100"}', "request"),
    ("POST", "/v1/reservations", '{"holder": "a", "request": "8xH100", "request": "1xH100"}', "request"),
    ("POST", "/v1/reservations/r-1/renew", '{"ttlSeconds": 60, "ttlSeconds": 600}', "ttlSeconds"),
    ("PUT", "/v1/hosts/dupe-a/facts", gpu0_uuid_twice("dupe-a"), "gpus[0].uuid"),
    ("PUT", "/v1/hosts/dupe-a/metrics", '{"hostname": "h", "gpus": [{"a": 1, "b": {"c": 1, "c": 2}}]}', "gpus[0].b.c"),
    ("PUT", "/v1/fabric", '{"cluster": "x", "switches": [], "cluster": "y"}', "cluster"),
    ("PUT", "/v1/sites", '{"sites": [], "links": [], "sites": []}', "sites"),
    ("PUT", "/v1/prices", '{"catalog": "a", "catalog": "b"}', "catalog"),
]


def assert_refused(resp: httpx.Response, field: str) -> None:
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert body["error"] == "invalid request"
    key = field.rsplit(".", 1)[-1].rsplit("]", 1)[-1]
    assert body["fields"] == [
        {"field": field, "message": f"the key {key!r} appears twice in one object; send each key once", "input": None}
    ]


@pytest.mark.parametrize(("method", "path", "text", "field"), ROUTES, ids=[r[1] for r in ROUTES])
@pytest.mark.parametrize("headers", [SHORT, FASTAPI_WAY], ids=["short way", "FastAPI's way"])
async def test_a_repeated_key_is_a_422_naming_it(
    client: httpx.AsyncClient, method: str, path: str, text: str, field: str, headers: dict[str, str]
) -> None:
    resp = await client.request(method, path, content=text, headers=headers)
    assert_refused(resp, field)


def test_every_rest_route_with_a_json_body_is_above(app: FastAPI) -> None:
    """A new route with a body joins ROUTES (its class parses strictly: StrictJSONRoute)."""
    paths = app.openapi()["paths"]
    with_body = {(m.upper(), p) for p, ops in paths.items() for m, op in ops.items() if "requestBody" in op}
    templated = {(m, p.replace("r-1", "{reservation_id}").replace("dupe-a", "{name}")) for m, p, _t, _f in ROUTES}
    assert with_body == templated


async def test_the_reservation_the_last_key_would_have_made_is_not_made(client: httpx.AsyncClient) -> None:
    """What the repeat hid (one GPU, not eight) is neither placed nor reserved: nothing is held."""
    assert (await client.put("/v1/hosts/dupe-b/facts", content=facts_text("dupe-b"), headers=SHORT)).status_code == 200
    text = '{"holder": "job-1", "request": "8xH100", "request": "1xH100", "ttlSeconds": 60}'
    assert_refused(await client.post("/v1/reservations", content=text, headers=SHORT), "request")
    held = await client.post("/graphql", json={"query": "{ reservations(first: 5) { id } }"})
    assert held.status_code == 200, held.text
    assert held.json() == {"data": {"reservations": []}}


async def test_valid_facts_still_go_the_short_way(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repeated-key certificate does not send a valid collector document the strict way."""
    taken = short_way_taken(monkeypatch)
    resp = await client.put("/v1/hosts/dupe-c/facts", content=facts_text("dupe-c"), headers=SHORT)
    assert resp.status_code == 200, resp.text
    assert taken == [True]


GRAPHQL_BODIES = [
    '{"query": "{ __typename }", "query": "{ nope }"}',
    '{"query": "query($t: String!) { placementText(text: $t) { __typename } }",'
    ' "variables": {"t": "1xH100", "t": "8xH100"}}',
    '{"query": "{ __typename }", "extensions": {"a": {"b": 1, "b": 2}}}',
]


@pytest.mark.parametrize("text", GRAPHQL_BODIES)
async def test_graphql_a_repeated_key_is_a_400(client: httpx.AsyncClient, text: str) -> None:
    resp = await client.post("/graphql", content=text, headers=SHORT)
    assert resp.status_code == 400, resp.text
    assert "invalid JSON: the key" in resp.text and "appears twice in one object" in resp.text


async def test_graphql_get_variables_with_a_repeated_key_are_a_400(client: httpx.AsyncClient) -> None:
    params = {"query": "query($t: String) { __typename }", "variables": '{"t": "a", "t": "b"}'}
    resp = await client.get("/graphql", params=params)
    assert resp.status_code == 400, resp.text
    assert "appears twice in one object" in resp.text


# The parser's own answers (no app).


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": 1, "a": 1}', ("a",)),
        ('{"a": {"b": [1, {"c": 1, "d": 2, "c": 3}]}}', ("a", "b", 1, "c")),
        ('[{}, {"x": {"y": 1}, "x": 2}]', (1, "x")),
        ('{"a": {"k": 1}, "b": {"k": 1}, "k": {"k": 1}}', None),  # the same key in different objects
    ],
)
def test_loads_refuses_a_repeat_at_any_depth_naming_its_path(text: str, path: tuple[Any, ...] | None) -> None:
    if path is None:
        assert strict_json.loads(text) == json.loads(text)
        return
    with pytest.raises(strict_json.DuplicateKey) as err:
        strict_json.loads(text.encode())
    assert err.value.path == path


def test_parse_model_leaves_a_repeated_key_to_the_strict_path() -> None:
    body = ReserveBody(holder="a", request="8xH100")
    text = body.model_dump_json()
    assert strict_json.parse_model(ReserveBody, text.encode()) == body
    assert strict_json.parse_model(ReserveBody, text.replace("{", '{"holder": "b", ', 1).encode()) is None
    facts = gpu0_uuid_twice("dupe-d").encode()
    assert HostFacts.model_validate_json(facts).gpus[0].uuid != "GPU-first"  # pydantic alone took the last
    assert strict_json.parse_model(HostFacts, facts) is None


TEXT = st.text(st.sampled_from('ab: {}[],"'), max_size=6)  # colons, braces and quotes inside strings
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(TEXT, inner), max_size=4),
    max_leaves=12,
)


def as_text(value: Any) -> str:
    """JSON text where a list of pairs is an object, repeats kept."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ", ".join(f"{json.dumps(k)}: {as_text(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(as_text(v) for v in value) + "]"
    return json.dumps(value)


def repeats(value: Any) -> bool:
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        keys = [k for k, _v in value]
        return len(set(keys)) < len(keys) or any(repeats(v) for _k, v in value)
    return isinstance(value, list) and any(repeats(v) for v in value)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_the_short_way_certificate_is_exact(value: Any) -> None:
    """`_no_repeated_key` (on a body without escapes) says no exactly where some object repeats
    a key, and the strict path agrees."""
    text = as_text(value)
    if "\\" in text:
        return  # escaped quotes: such a body never reaches the certificate
    assert strict_json._no_repeated_key(text.encode()) is not repeats(value)
    if repeats(value):
        with pytest.raises(strict_json.DuplicateKey):
            strict_json.loads(text)
    else:
        strict_json.loads(text)
