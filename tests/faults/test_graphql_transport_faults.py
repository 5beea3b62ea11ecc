"""GraphQL faults a probe of the HTTP and WebSocket surface found (stop 63), through the app.

- /metrics grew a series per document: the timer labelled each request with whatever root
  names it held (unknown fields, fragment names), valid or not;
- the JSON body `null` was a 500 (strawberry read it with .get());
- an unknown fragment (`{ ...Nope }`) raised a KeyError in strawberry's depth limiter: over HTTP
  the bare text 'Nope' and a traceback, over SSE a cut stream, over graphql-transport-ws a bare
  `complete`;
- an Int literal past Python's 4,300 digits was masked as "Unexpected error." and logged as a bug;
- refusals that may be abuse (FORBIDDEN, too expensive) logged at INFO like a typo, where
  docs/ui.md promised WARNING.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets
from fastapi import FastAPI
from websockets.typing import Subprotocol

from graphsvc.api.app import create_app
from graphsvc.api.graphql.limiter_rules import MAX_ALIASES
from graphsvc.security.auth import Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.faults.live import serving

HANG_GUARD_S = 120  # only against hanging for ever
COLLECTOR, COLLECTOR_ENTRY = new_token("gql-faults-coll", Role.COLLECTOR, ["nothing-*"])
SCHEDULER, SCHEDULER_ENTRY = new_token("gql-faults-sched", Role.SCHEDULER)
SECRETS = (COLLECTOR, SCHEDULER)  # the secrets-in-logs test looks for these
UNKNOWN_FRAGMENT = "{ ...Nope }"
LONG_INT = "{ hosts(first: 1" + "0" * 5000 + ") { nodes { name } } }"


@pytest.fixture
def secured(gateway: Gateway) -> FastAPI:
    return create_app(Settings(tokens=json.dumps([COLLECTOR_ENTRY, SCHEDULER_ENTRY])), gateway=gateway)


@pytest.fixture
async def as_collector(secured: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=secured, raise_app_exceptions=False)
    headers = {"authorization": f"Bearer {COLLECTOR}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        yield c


def graphql_series(metrics: str) -> set[str]:
    """The `operation` labels of graphsvc_request_seconds that time GraphQL."""
    out = set()
    for line in metrics.splitlines():
        if line.startswith("graphsvc_request_seconds_count{"):
            label = line.split('operation="', 1)[1].split('"', 1)[0]
            if label.startswith("graphql"):
                out.add(label)
    return out


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_metric_labels_are_the_schemas_root_fields_whatever_a_document_names(
    as_collector: httpx.AsyncClient,
) -> None:
    for i in range(25):
        await as_collector.post("/graphql", json={"query": f"{{ field_{i:03d}_{'x' * 80} }}"})  # invalid
        await as_collector.post(  # valid: the fragment's name is the client's, its field the schema's
            "/graphql", json={"query": f"{{ ...Frag{i:03d} }} fragment Frag{i:03d} on Query {{ __typename }}"}
        )
    await as_collector.post("/graphql", json={"query": "{ clusterSummary { hosts } }"})  # FORBIDDEN, still valid
    await as_collector.post("/graphql", json={"query": "{ sites { name } siteLinks { a } }"})
    await as_collector.post("/graphql", json={"query": '{ a: __typename host(name: "x") { name } hosts { total } }'})
    series = graphql_series((await as_collector.get("/metrics")).text)
    assert series == {
        "graphql invalid",
        "graphql __typename",
        "graphql clusterSummary",  # the label a valid request always had
        "graphql siteLinks,sites",
        "graphql multiple",
    }, series


@pytest.mark.parametrize("body", ["null", "[1]"])
async def test_a_body_that_is_null_is_a_400_and_a_batch_stays_refused(client: httpx.AsyncClient, body: str) -> None:
    resp = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    if body == "null":
        assert "invalid JSON: a GraphQL request is a JSON object" in resp.text


async def test_variables_null_on_a_get_are_no_variables(client: httpx.AsyncClient) -> None:
    resp = await client.get("/graphql", params={"query": "{ __typename }", "variables": "null"})
    assert resp.status_code == 200 and resp.json() == {"data": {"__typename": "Query"}}, resp.text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (UNKNOWN_FRAGMENT, "Unknown fragment 'Nope'."),
        ("{ ...A } fragment A on Query { ...Nope }", "Unknown fragment 'Nope'."),
        (LONG_INT, "Number too long (5001 characters): an Int is a 32-bit integer"),
    ],
    ids=["unknown-fragment", "unknown-fragment-inside-one", "long-int"],
)
async def test_a_document_error_is_told_over_http_not_masked_nor_logged_as_a_bug(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, query: str, message: str
) -> None:
    caplog.set_level(logging.INFO)
    resp = await client.post("/graphql", json={"query": query})
    assert resp.status_code == 200, resp.text
    assert [e["message"] for e in resp.json()["errors"]] == [message], resp.text
    assert not errors_logged(caplog)
    told = [r for r in caplog.records if r.name == "graphsvc.graphql"]
    assert [(r.levelno, r.getMessage()) for r in told] == [(logging.INFO, f"graphql request refused: {message}")]


async def test_a_document_error_is_told_over_sse_and_both_websocket_protocols(
    secured: FastAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    auth = {"authorization": f"Bearer {SCHEDULER}"}
    told = {UNKNOWN_FRAGMENT: "Unknown fragment 'Nope'.", LONG_INT: "Number too long (5001 characters)"}
    async with serving(secured) as where:
        for query, message in told.items():
            async with httpx.AsyncClient(base_url=f"http://{where}", headers=auth, timeout=HANG_GUARD_S) as http:
                sse = await http.post("/graphql", json={"query": query}, headers={"accept": "text/event-stream"})
            assert sse.status_code == 200 and message in sse.text and "event: complete" in sse.text, sse.text
            subscribe: dict[str, Any] = {"id": "1", "type": "subscribe", "payload": {"query": query}}
            start: dict[str, Any] = {"id": "1", "type": "start", "payload": {"query": query}}
            for protocol, request in (("graphql-transport-ws", subscribe), ("graphql-ws", start)):
                async with websockets.connect(
                    f"ws://{where}/graphql", subprotocols=[Subprotocol(protocol)], additional_headers=auth
                ) as ws:
                    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
                    assert json.loads(await asyncio.wait_for(ws.recv(), HANG_GUARD_S))["type"] == "connection_ack"
                    await ws.send(json.dumps(request))
                    frame = json.loads(await asyncio.wait_for(ws.recv(), HANG_GUARD_S))
                if protocol == "graphql-transport-ws":  # a document error: an error frame, not a bare complete
                    assert frame["type"] == "error" and message in json.dumps(frame), frame
                else:  # the old protocol refuses a query before it reads the document
                    assert frame["type"] == "error", frame
    assert not errors_logged(caplog)


async def test_a_fragment_fanning_out_is_measured_once_and_the_aliases_counted_in_full(
    client: httpx.AsyncClient,
) -> None:
    """Each fragment spreads the next twice: strawberry's limiters walked every path (some 2 s for
    17 fragments, doubling with each one: the 2,000-token limit allows some 200); each is measured
    once now. Every path selects the alias `a`: 2**22 - 1 of them."""
    n = 22
    chain = " ".join(f"fragment F{i} on Query {{ a: __typename ...F{i + 1} ...F{i + 1} }}" for i in range(n))
    doc = "{ ...F0 } " + chain + f" fragment F{n} on Query {{ __typename }}"
    body = (await client.post("/graphql", json={"query": doc})).json()
    assert [e["message"] for e in body["errors"]] == [f"over a million aliases found. Allowed: {MAX_ALIASES}"]
    within = "{ ...F0 } fragment F0 on Query { a: __typename ...F1 ...F1 } fragment F1 on Query { b: __typename }"
    assert (await client.post("/graphql", json={"query": within})).json() == {
        "data": {"a": "Query", "b": "Query"}
    }  # three aliases selected (a, and b twice into one key)


@pytest.mark.parametrize(("levels", "refused"), [(11, True), (10, False)])
async def test_the_depth_limit_counts_through_fragments(client: httpx.AsyncClient, levels: int, refused: bool) -> None:
    """The limits are strawberry's still (a field with a selection set is a level, at most 10),
    counted through a fragment and an inline fragment."""
    doc = "{ ...F } fragment F on Query { ... on Query { " + "x { " * levels + "y" + " }" * levels + " } }"
    messages = [e["message"] for e in (await client.post("/graphql", json={"query": doc})).json()["errors"]]
    assert ("'anonymous' exceeds maximum operation depth of 10" in messages) is refused, messages


async def test_refusals_that_may_be_abuse_are_warnings_and_mistakes_info(
    as_collector: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await as_collector.post("/graphql", json={"query": "{ clusterSummary { hosts } }"})
    expensive = "{ " + " ".join(f"a{i}: placement(request: {{gpus: 4096}}) {{ request }}" for i in range(15)) + " }"
    await as_collector.post("/graphql", json={"query": expensive})
    await as_collector.post("/graphql", json={"query": "{ hostz }"})
    told = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "graphsvc.graphql"]
    assert len(told) == 3, told
    assert told[0][0] == "WARNING" and told[0][1].startswith(
        "graphql request refused (FORBIDDEN, token gql-faults-coll): forbidden:"
    )
    assert told[1][0] == "WARNING" and told[1][1].startswith(
        "graphql request refused (QUERY_TOO_EXPENSIVE, token gql-faults-coll): query too expensive"
    )
    assert told[2][0] == "INFO" and told[2][1].startswith("graphql request refused: Cannot query field 'hostz'")
    assert not [r for r in caplog.records if r.name.startswith("strawberry")]
