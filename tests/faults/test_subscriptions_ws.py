"""#13.8: GraphQL subscriptions over a real websocket (uvicorn + the pinned `websockets`).

Before, no websocket library was installed and the handshake answered 400. Here a client
subscribes to events over a socket, a reservation is made over HTTP on the same server,
and its event arrives on the socket; a client without a token is refused at the handshake.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection
from websockets.typing import Subprotocol

from graphsvc.api.app import create_app
from graphsvc.security.auth import Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.faults.live import serving

HANG_GUARD_S = 120  # only against hanging for ever; the work itself is bounded
PROTOCOL = Subprotocol("graphql-transport-ws")
SCHED_TOKEN, SCHED_ENTRY = new_token("ws-sched", Role.SCHEDULER)
SECRETS = (SCHED_TOKEN,)  # the secrets-in-logs test looks for these


async def next_message(ws: ClientConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), HANG_GUARD_S))
    return message


def connect(where: str, headers: dict[str, str]) -> websockets.connect:
    return websockets.connect(f"ws://{where}/graphql", subprotocols=[PROTOCOL], additional_headers=headers)


async def subscribe(ws: ClientConnection, query: str) -> None:
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert (await next_message(ws))["type"] == "connection_ack"
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))


@pytest.fixture
async def secured(gateway: Gateway) -> FastAPI:
    await load(gateway, "l40s:hosts=2")
    return create_app(Settings(tokens=json.dumps([SCHED_ENTRY])), gateway=gateway)


async def test_reservation_event_arrives_over_a_websocket(secured: FastAPI) -> None:
    auth = {"authorization": f"Bearer {SCHED_TOKEN}"}
    async with serving(secured) as where:
        async with websockets.connect(
            f"ws://{where}/graphql",
            subprotocols=[PROTOCOL],
            additional_headers=auth,
        ) as ws:
            assert ws.subprotocol == PROTOCOL
            await subscribe(ws, "subscription { events { kind subject holder } }")
            # The subscription is live once the bus has its subscriber; then make an event.
            bus = secured.state.reservations.events
            for _ in range(10_000):
                if bus.subscribers:
                    break
                await asyncio.sleep(0.01)
            assert bus.subscribers == 1
            async with httpx.AsyncClient(base_url=f"http://{where}", headers=auth, timeout=HANG_GUARD_S) as http:
                resp = await http.post(
                    "/graphql",
                    json={"query": 'mutation { reserve(input: {holder: "ws-job", request: {gpus: 1}}) '
                                   "{ __typename ... on Reservation { id } } }"},
                )  # fmt: skip
            reserved = resp.json()["data"]["reserve"]
            assert reserved["__typename"] == "Reservation", resp.text
            message = await next_message(ws)
            assert message["type"] == "next", message
            event = message["payload"]["data"]["events"]
            assert event == {"kind": "reservation.created", "subject": reserved["id"], "holder": "ws-job"}
            await ws.send(json.dumps({"id": "1", "type": "complete"}))
        for _ in range(10_000):
            if not bus.subscribers:
                break
            await asyncio.sleep(0.01)
        assert bus.subscribers == 0  # closing the socket ends the subscription


async def test_websocket_without_a_token_is_refused(secured: FastAPI) -> None:
    async with serving(secured) as where:
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            async with websockets.connect(f"ws://{where}/graphql", subprotocols=[PROTOCOL]):
                pass
        assert refused.value.response.status_code in (401, 403)


@pytest.mark.parametrize(
    "message",
    [
        '{"id": "1", "type": "subscribe", "payload": {"query": "{ x }", "variables": {"a": NaN}}}',
        '"x"',  # not an object: strawberry's handler failed on it, the socket dropped without a close
        '{"id": "1", "type": "subscribe", "payload": {"query": "{ x }", "variables": {"a": ' + "9" * 5000 + "}}}",
    ],
    ids=["nan", "a-string", "a-number-too-long"],
)
async def test_a_message_that_is_not_strict_json_or_not_an_object_closes_the_socket_with_4400(
    secured: FastAPI, message: str
) -> None:
    auth = {"authorization": f"Bearer {SCHED_TOKEN}"}
    async with (
        serving(secured) as where,
        websockets.connect(
            f"ws://{where}/graphql",
            subprotocols=[PROTOCOL],
            additional_headers=auth,
        ) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert (await next_message(ws))["type"] == "connection_ack"
        await ws.send(message)
        with pytest.raises(websockets.exceptions.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), HANG_GUARD_S)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400


@pytest.mark.parametrize(
    "query",
    [
        "subscription { events { kind }",  # an unclosed brace
        "subscription { events { kind } }\n" + "# x\n" * 3000 + "{ a b c d e f g h }" * 300,
    ],
    ids=["unclosed", "over-the-token-limit"],
)
async def test_a_document_that_does_not_parse_is_told_its_syntax_error(
    secured: FastAPI, query: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Over HTTP a syntax error is the answer; over a socket it got a bare `complete` (or nothing)
    and a traceback in the log (a probe's case): strawberry's parser cache parses outside the
    error handling of strawberry's own parse (graphsvc.api.graphql.parser_cache). The socket now
    closes with 4400 and the syntax error, as graphql-transport-ws closes on an invalid message."""
    auth = {"authorization": f"Bearer {SCHED_TOKEN}"}
    async with serving(secured) as where, connect(where, auth) as ws:
        await subscribe(ws, query)
        with pytest.raises(websockets.exceptions.ConnectionClosedError) as closed:
            await next_message(ws)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
    assert "Syntax Error" in closed.value.rcvd.reason
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_a_websocket_message_is_capped_as_an_http_body_is() -> None:
    """uvicorn's default, 16 MiB, took a 15 MiB query over a socket where HTTP refuses 4 MiB."""
    from graphsvc.cli import _server

    settings = Settings(insecure_dev=True, max_body_bytes=1 << 20)
    assert _server(settings).config.ws_max_size == 1 << 20
