"""#13.6: NaN/Infinity, lone surrogates and deep nesting are a clear 4xx, never a 500 or a reset.

Each body is written by hand (Python's json would refuse to write some of them) and sent to
the REST ingest and to GraphQL, as a query variable and inside the query text.
"""

from __future__ import annotations

import json

import httpx
import pytest

from graphsvc.api.errors import _input
from graphsvc.api.strict_json import MAX_DEPTH, InvalidJSON, check, loads
from tests.helpers import as_json, h100

JSON = {"content-type": "application/json"}


def facts_text(**replace: str) -> str:
    """The JSON text of valid host facts with some values replaced by raw JSON text."""
    data = as_json(h100("hostile-a"))
    text = json.dumps(data)
    for key, raw in replace.items():
        old = json.dumps({key: data[key]})[1:-1]
        assert old in text, key
        text = text.replace(old, f'"{key}": {raw}', 1)
    return text


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity"])
async def test_rest_non_finite_number_is_400(client: httpx.AsyncClient, raw: str) -> None:
    body = facts_text(collected_at=raw)
    resp = await client.put("/v1/hosts/hostile-a/facts", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert f"{raw} is not a JSON number" in resp.json()["error"]


@pytest.mark.parametrize("where", ["hostname", "cluster"])
async def test_rest_lone_surrogate_is_400(client: httpx.AsyncClient, where: str) -> None:
    body = facts_text(**{where: '"bad\\ud800name"'})
    resp = await client.put("/v1/hosts/hostile-a/facts", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "lone UTF-16 surrogate (\\ud800)" in resp.json()["error"]


async def test_rest_surrogate_pair_is_a_character_not_an_error(client: httpx.AsyncClient) -> None:
    body = facts_text(cluster='"emoji-\\ud83d\\ude00"')
    resp = await client.put("/v1/hosts/hostile-a/facts", content=body, headers=JSON)
    assert resp.status_code < 500, resp.text


async def test_rest_deep_nesting_is_400(client: httpx.AsyncClient) -> None:
    body = "[" * 50_000 + "]" * 50_000
    resp = await client.put("/v1/hosts/hostile-a/facts", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "nested too deeply" in resp.json()["error"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500])
@pytest.mark.parametrize(
    ("route", "body"),
    [("/v1/place", '{{"request": {}}}'), ("/v1/reservations", '{{"holder": "x", "request": "1xH100", "labels": {}}}')],
)
async def test_rest_nesting_past_the_limit_is_400_not_a_422_for_its_shape(
    client: httpx.AsyncClient, route: str, body: str, depth: int
) -> None:
    """Bodies 65-990 levels deep were read and answered 422 for their shape; only past Python's
    recursion limit did the 400 docs/deploy.md promises come (a probe, stop 73)."""
    resp = await client.post(route, content=body.format("[" * depth + "]" * depth), headers=JSON)
    assert resp.status_code == 400, resp.text
    assert f"nested too deeply (the limit is {MAX_DEPTH} levels)" in resp.json()["error"]


async def test_rest_nesting_at_the_limit_is_read(client: httpx.AsyncClient) -> None:
    deep = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    resp = await client.post("/v1/place", content='{"request": ' + deep + "}", headers=JSON)
    assert resp.status_code == 422, resp.text  # its shape: a list is no request text


@pytest.mark.parametrize("route", ["/v1/reservations", "/graphql"])
async def test_a_number_too_long_to_read_is_told_without_the_interpreters_advice(
    client: httpx.AsyncClient, route: str
) -> None:
    """The 400 quoted Python's own error, which told the client to call sys.set_int_max_str_digits()."""
    body = '{"holder": "x", "request": "1xH100", "ttlSeconds": ' + "9" * 5000 + "}"
    if route == "/graphql":
        body = '{"query": "{ __typename }", "variables": {"n": ' + "9" * 5000 + "}}"
    resp = await client.post(route, content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "a number too long to read (more than 4300 digits)" in resp.text
    assert "sys." not in resp.text


RESERVE = "mutation($h: String!) { reserve(input: {holder: $h, gpus: []}) { __typename } }"


async def graphql(client: httpx.AsyncClient, body: str) -> httpx.Response:
    return await client.post("/graphql", content=body, headers=JSON)


@pytest.mark.parametrize(
    ("variables", "expect"),
    [
        ('{"h": NaN}', "NaN is not a JSON number"),
        ('{"h": Infinity}', "Infinity is not a JSON number"),
        ('{"h": "x\\udfff"}', "lone UTF-16 surrogate (\\udfff)"),
        ('{"h\\ud800": "x"}', "lone UTF-16 surrogate (\\ud800)"),
        ('{"h": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
        ('{"h": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}", "nested too deeply"),
        ('{"h": ' + '{"a":' * 800 + "1" + "}" * 800 + "}", "nested too deeply"),
        ('{"h": ' + "9" * 5000 + "}", "a number too long to read"),  # past int()'s 4300 digits: was a 500
    ],
)
async def test_graphql_hostile_variables_are_400(client: httpx.AsyncClient, variables: str, expect: str) -> None:
    resp = await graphql(client, '{"query": ' + json.dumps(RESERVE) + ', "variables": ' + variables + "}")
    assert resp.status_code == 400, resp.text
    assert expect in resp.text


@pytest.mark.parametrize("body", ['"x"', "5", "true", '{"query": "{ __typename }", "x": ' + "9" * 5000 + "}"])
async def test_graphql_a_body_that_is_no_request_is_400(client: httpx.AsyncClient, body: str) -> None:
    """A JSON value that is not an object (strawberry read its fields with .get()) and a number
    past int()'s digit limit were answered 500 (a probe of stop 58)."""
    resp = await graphql(client, body)
    assert resp.status_code == 400, resp.text
    assert "invalid JSON" in resp.text


async def test_graphql_variables_that_are_no_object_on_a_get_are_400(client: httpx.AsyncClient) -> None:
    resp = await client.get("/graphql", params={"query": "{ __typename }", "variables": "9" * 5000})
    assert resp.status_code == 400, resp.text


async def test_graphql_lone_surrogate_in_the_query_text_is_not_a_500(client: httpx.AsyncClient) -> None:
    query = '{"query": "{ host(name: \\"a\\ud800\\") { name } }"}'
    resp = await graphql(client, query)
    assert resp.status_code == 400, resp.text


async def test_graphql_surrogate_escape_inside_graphql_string_is_a_graphql_error(client: httpx.AsyncClient) -> None:
    # The JSON is clean (an escaped backslash); the GraphQL lexer sees \ud800 and refuses it.
    resp = await graphql(client, json.dumps({"query": '{ host(name: "a\\ud800") { name } }'}))
    assert resp.status_code < 500, resp.text
    assert resp.json()["errors"], resp.text


@pytest.mark.parametrize(("open_", "close"), [("[", "]"), ("{a: ", "}")], ids=["lists", "objects"])
async def test_graphql_deeply_nested_query_text_is_not_a_500(client: httpx.AsyncClient, open_: str, close: str) -> None:
    depth = 640  # about as deep as the 2,000-token limit lets an input literal go
    literal = open_ * depth + "1" + close * depth
    query = "{ placement(request: {gpus: " + literal + "}) { request } }"
    resp = await graphql(client, json.dumps({"query": query}))
    assert resp.status_code < 500, resp.text
    assert resp.json()["errors"], resp.text


@pytest.mark.parametrize(
    ("value", "echo"),
    [
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        ("a\ud800b", "a\\ud800b"),
        (1.5, 1.5),
        ("x" * 300, "x" * 200 + "..."),
    ],
)
def test_error_echo_is_always_encodable(value: object, echo: object) -> None:
    assert _input(value) == echo
    json.dumps({"input": _input(value)}, allow_nan=False).encode("utf-8")


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (["a", {"k": "\ud800"}], True),
        ({"\udc00": 1}, True),
        (nested(MAX_DEPTH), False),
        (nested(MAX_DEPTH + 1), True),
        (nested(100_000), True),
        ({"k": ["\U0001f600", 1.5, None]}, False),
    ],
)
def test_check_refuses_what_json_cannot_carry(value: object, refused: bool) -> None:
    if refused:
        with pytest.raises(InvalidJSON):
            check(value)
    else:
        check(value)


def test_loads_table() -> None:
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"
    assert loads('"\\\\ud800"') == "\\ud800"  # an escaped backslash, not a surrogate
    assert loads(b"[1.5, null]") == [1.5, None]
    with pytest.raises(InvalidJSON, match="not valid UTF-8"):
        loads(b'"\xff"')
    with pytest.raises(InvalidJSON, match="a number too long to read"):
        loads("9" * 5000)
