"""#13.5: the caller is known before the body is read, and the body limit depends on who it is.

An anonymous 59 MB fabric PUT used to be read and parsed (800 MB of memory) before the
401. Now it is refused as soon as it is known to be too large for an anonymous caller: the
tests count how much of the body the service pulled, and over a real socket they read the
answer before sending the rest of the body.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from graphsvc.api.app import create_app
from graphsvc.security.auth import AUTH_REQUIRED, UNKNOWN_TOKEN, Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.faults.live import serving

MiB = 1024 * 1024
TOKENS: dict[str, str] = {}
ENTRIES: list[dict[str, object]] = []
for _name, _role in [("col", Role.COLLECTOR), ("sched", Role.SCHEDULER), ("ops", Role.OPERATOR)]:
    _token, _entry = new_token(_name, _role, ["*"] if _role is Role.COLLECTOR else [])
    TOKENS[_name] = _token
    ENTRIES.append(_entry)
SECRETS = tuple(TOKENS.values())  # the secrets-in-logs test looks for these


@pytest.fixture
def secured_app(gateway: Gateway) -> FastAPI:
    return create_app(Settings(tokens=json.dumps(ENTRIES)), gateway=gateway)


class CountingBody:
    """A chunked request body that counts how many chunks the server pulled."""

    def __init__(self, chunks: int, size: int = MiB) -> None:
        self.chunks = chunks
        self.size = size
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.chunks):
            self.pulled += 1
            yield b" " * self.size


def headers(who: str | None) -> dict[str, str]:
    base = {"content-type": "application/json"}
    return {**base, "authorization": f"Bearer {TOKENS[who]}"} if who else base


async def put(app: FastAPI, path: str, body: CountingBody, who: str | None) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        return await c.put(path, content=body, headers=headers(who))


async def test_anonymous_streamed_59mb_fabric_is_refused_after_one_chunk(secured_app: FastAPI) -> None:
    body = CountingBody(59)
    resp = await put(secured_app, "/v1/fabric", body, None)
    assert resp.status_code == 401, resp.text
    assert resp.headers["www-authenticate"] == "Bearer"
    assert "authentication required" in resp.text  # the limiter's answer, or the route's (role before body)
    assert body.pulled <= 1  # the other 58 MB were never read


async def test_unknown_token_is_anonymous_for_the_body_limit(secured_app: FastAPI) -> None:
    body = CountingBody(59)
    transport = httpx.ASGITransport(app=secured_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.put("/v1/fabric", content=body, headers={"authorization": "Bearer gs_not-a-token"})
    assert resp.status_code == 401
    assert body.pulled <= 1


async def test_anonymous_declared_length_is_refused_before_any_byte(secured_app: FastAPI) -> None:
    body = CountingBody(59)
    transport = httpx.ASGITransport(app=secured_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.put(
            "/v1/fabric", content=body, headers={"content-length": str(59 * MiB), "content-type": "application/json"}
        )
    assert resp.status_code == 401
    assert body.pulled == 0


@pytest.mark.parametrize("who", ["col", "sched"])
async def test_only_operators_get_the_fabric_limit(secured_app: FastAPI, who: str) -> None:
    """Other roles are refused before their body is read: 403 (the fabric route checks the role
    first, stop 62), where they were read up to the 4 MiB limit and answered 413."""
    body = CountingBody(59)
    resp = await put(secured_app, "/v1/fabric", body, who)
    assert resp.status_code == 403, resp.text
    assert "needs the operator role" in resp.json()["error"]
    assert body.pulled <= 5


async def test_operator_fabric_body_is_read_and_validated(secured_app: FastAPI) -> None:
    body = CountingBody(6)  # over the 4 MiB host limit, under the fabric limit: not a size problem
    resp = await put(secured_app, "/v1/fabric", body, "ops")
    assert resp.status_code == 400, resp.text  # read whole, then refused as what it is: not JSON
    assert resp.json()["error"] == "invalid JSON"
    assert body.pulled == 6


async def test_small_anonymous_request_still_gets_the_usual_401(secured_app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=secured_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.post("/graphql", json={"query": "{ clusterSummary { hosts } }"})
    assert resp.status_code == 401
    assert "authentication required" in resp.json()["error"]


async def test_over_a_real_socket_the_refusal_comes_before_the_body(secured_app: FastAPI) -> None:
    """Send the headers of a 59 MB anonymous PUT and 64 KiB of it; the 401 arrives anyway."""
    async with serving(secured_app) as where:
        host, port = where.split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            f"PUT /v1/fabric HTTP/1.1\r\nhost: {where}\r\ncontent-type: application/json\r\n"
            f"content-length: {59 * MiB}\r\n\r\n".encode()
        )
        writer.write(b" " * 65536)
        await writer.drain()
        # A guard against hanging for ever (before the fix the server waited for the other 59 MB),
        # not a speed threshold: any answer at all is what matters.
        try:
            status_line = await asyncio.wait_for(reader.readline(), timeout=120)
        except TimeoutError:
            status_line = b"(no answer while the body was incomplete)"
        writer.close()
        assert status_line.startswith(b"HTTP/1.1 401"), status_line


async def test_a_request_looks_its_token_up_once(secured_app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body-size middleware looks the caller up before the body; the route's `caller` reuses
    it (graphsvc.security.auth.PRINCIPAL_SCOPE_KEY) rather than digesting the token and comparing
    it with every token held a second time. Stop 66's profile: ~2% of a reservation's service CPU."""
    tokens = secured_app.state.tokens
    looked_up: list[str] = []
    real = tokens.lookup

    def counted(token: str) -> object:
        looked_up.append(token)
        return real(token)

    monkeypatch.setattr(tokens, "lookup", counted)
    transport = httpx.ASGITransport(app=secured_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        rest = await c.get("/v1/reservations/rsv-none", headers=headers("sched"))
        assert rest.json()["kind"] == "NotFound", rest.text  # the caller known, the reservation not
        assert looked_up == [TOKENS["sched"]]
        graphql = await c.post("/graphql", json={"query": "{ __typename }"}, headers=headers("ops"))
        assert graphql.status_code == 200, graphql.text
        assert looked_up == [TOKENS["sched"], TOKENS["ops"]]
        unknown = await c.get("/v1/reservations/rsv-none", headers={"authorization": "Bearer gs_not-a-token"})
        assert unknown.status_code == 401 and unknown.json()["detail"] == UNKNOWN_TOKEN
        anonymous = await c.get("/v1/reservations/rsv-none")
        assert anonymous.status_code == 401 and anonymous.json()["detail"] == AUTH_REQUIRED
    assert looked_up == [TOKENS["sched"], TOKENS["ops"], "gs_not-a-token"]
