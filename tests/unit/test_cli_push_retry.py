"""The CLI's fact pushes survive a connection dropped before the answer (a keep-alive connection
the server closed as the request went out): the PUT is idempotent, so it is sent again, a
bounded number of times."""

from __future__ import annotations

import httpx
import pytest

from graphsvc.cli import PUT_ATTEMPTS, _put_again_if_dropped


def transport(failures: int, error: type[httpx.TransportError]) -> tuple[httpx.MockTransport, list[bytes]]:
    seen: list[bytes] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        if len(seen) <= failures:
            raise error("connection dropped", request=request)
        return httpx.Response(200, json={"ok": True})

    return httpx.MockTransport(handle), seen


@pytest.mark.parametrize("error", [httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError])
async def test_a_dropped_connection_is_sent_again(error: type[httpx.TransportError]) -> None:
    mock, seen = transport(PUT_ATTEMPTS - 1, error)
    async with httpx.AsyncClient(transport=mock, base_url="http://svc") as client:
        resp = await _put_again_if_dropped(client, "/v1/fabric", '{"a": 1}')
    assert resp.status_code == 200 and seen == [b'{"a": 1}'] * PUT_ATTEMPTS


async def test_it_gives_up_after_the_last_attempt_and_never_resends_other_errors() -> None:
    mock, seen = transport(PUT_ATTEMPTS, httpx.ReadError)
    async with httpx.AsyncClient(transport=mock, base_url="http://svc") as client:
        with pytest.raises(httpx.ReadError):
            await _put_again_if_dropped(client, "/v1/fabric", "{}")
    assert len(seen) == PUT_ATTEMPTS
    refused, seen = transport(1, httpx.ConnectError)  # nothing is listening: said at once, not retried
    async with httpx.AsyncClient(transport=refused, base_url="http://svc") as client:
        with pytest.raises(httpx.ConnectError):
            await _put_again_if_dropped(client, "/v1/fabric", "{}")
    assert len(seen) == 1
