"""The short way of `PUT /v1/hosts/{name}/facts` (graphsvc/api/one_pass_route.py) answers as
FastAPI's way does: every request is sent twice, once as collectors send it (`application/json`:
the short way where the body is valid) and once with a charset parameter (always FastAPI's way),
and both answers must agree on status, error and result. Both stores."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Depends, HTTPException

from graphsvc.api import rest_reservations
from graphsvc.api.app import create_app
from graphsvc.api.one_pass_route import OnePassRoute, one_pass_route
from graphsvc.security.auth import Principal, Role, authenticate, caller, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.helpers import as_json, h100
from tests.strict_json_helpers import short_way_taken

OPS, OPS_ENTRY = new_token("route-ops", Role.OPERATOR)
COLLECTOR, COLLECTOR_ENTRY = new_token("route-collector", Role.COLLECTOR, ["route-c*"])
SCHEDULER, SCHEDULER_ENTRY = new_token("route-sched", Role.SCHEDULER)
Secured = tuple[httpx.AsyncClient, list[bool]]
SHORT = "application/json"
FASTAPI_WAY = "application/json; charset=utf-8"


@pytest.fixture
async def secured(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Secured]:
    """A client of an app with tokens, and a list counting the bodies `parse_model` took."""
    taken = short_way_taken(monkeypatch)
    entries = json.dumps([OPS_ENTRY, COLLECTOR_ENTRY, SCHEDULER_ENTRY])
    app = create_app(Settings(tokens=entries, dev_mode=False), gateway=gateway)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c, taken


CLOCK_TEXT = ((re.compile(r"Facts are \d+ s old\."), "Facts are N s old."), (re.compile(r"\d+ s ahead"), "N s ahead"))


def without_clock_text(answer: Any) -> Any:
    """An answer with the texts read from the clock inside each request ("Facts are N s old.",
    "collected_at is N s ahead") made one text: two requests a second apart on a loaded machine
    (CI saw 4 s for one statement) may differ by one; the rest must agree."""
    text = json.dumps(answer)
    for pattern, same in CLOCK_TEXT:
        text = pattern.sub(same, text)
    return json.loads(text)


def at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def doc(host: str, collected_at: str, seed: int = 1, **changes: Any) -> dict[str, Any]:
    out = {**as_json(h100(host, seed=seed)), "collected_at": collected_at, **changes}
    return out


def comparable(resp: httpx.Response) -> tuple[int, Any]:
    """Status and body, less what differs between two answers by time alone."""
    body = resp.json()
    if isinstance(body, dict):
        body.pop("received_at", None)
    return resp.status_code, without_clock_text(body)


async def both_ways(
    client: httpx.AsyncClient, path: str, make_body: Callable[[int], dict[str, Any] | bytes], token: str | None
) -> tuple[tuple[int, Any], tuple[int, Any]]:
    """The answers of the short way and of FastAPI's way; `make_body(i)` builds the i-th body (a
    later collected_at, say, so the second is not a replay of the first)."""
    out = []
    for i, content_type in enumerate([SHORT, FASTAPI_WAY]):
        headers = {"content-type": content_type}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        body = make_body(i)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        out.append(comparable(await client.put(path, content=raw, headers=headers)))
    return out[0], out[1]


CASES: list[tuple[str, str, Callable[[int], dict[str, Any] | bytes], str | None, int, bool]] = [
    # id, path, body, token, status, short way taken
    ("new host", "/v1/hosts/route-a/facts", lambda i: doc("route-a", at(-60 + i)), OPS, 200, True),
    ("again, newer", "/v1/hosts/route-a/facts", lambda i: doc("route-a", at(-50 + i)), OPS, 200, True),
    ("replayed", "/v1/hosts/route-a/facts", lambda i: doc("route-a", at(-300)), OPS, 200, True),
    ("own host", "/v1/hosts/route-c1/facts", lambda i: doc("route-c1", at(-60 + i), seed=5), COLLECTOR, 200, True),
    ("another's host", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(-60)), COLLECTOR, 403, True),
    ("scheduler", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(-60)), SCHEDULER, 403, True),
    ("no token", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(-60)), None, 401, True),
    ("bad token", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(-60)), "gs_nope", 401, True),
    ("url and body differ", "/v1/hosts/route-b/facts", lambda i: doc("route-x", at(-60)), OPS, 422, True),
    ("from the future", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(86_400)), OPS, 422, True),
    ("invalid facts", "/v1/hosts/route-b/facts", lambda i: doc("route-b", at(-60), gpus="x"), OPS, 422, False),
    ("NaN", "/v1/hosts/route-b/facts", lambda i: b'{"hostname": NaN}', OPS, 400, False),
    ("not JSON", "/v1/hosts/route-b/facts", lambda i: b"{", OPS, 400, False),
    ("bad host name", "/v1/hosts/-route/facts", lambda i: doc("route-b", at(-60)), OPS, 422, False),
]


@pytest.mark.parametrize(
    ("path", "body", "token", "status", "short"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_both_ways_answer_alike(
    secured: Secured,
    path: str,
    body: Callable[[int], dict[str, Any] | bytes],
    token: str | None,
    status: int,
    short: bool,
) -> None:
    client, taken = secured
    for setup in CASES[: 2 if "route-a" in path else 0]:  # the route-a cases build on the new host
        if setup[1] == path and setup[2] is not body:
            await both_ways(client, setup[1], setup[2], setup[3])
    del taken[:]
    short_way, fastapi_way = await both_ways(client, path, body, token)
    assert short_way == fastapi_way
    assert short_way[0] == status, short_way
    assert taken[:1] == ([True] if short else [False] if taken else [])


async def test_a_gpu_of_another_host_is_the_same_conflict_both_ways(
    secured: Secured,
) -> None:
    client, taken = secured
    owner = doc("route-owner", at(-60))
    await client.put("/v1/hosts/route-owner/facts", json=owner, headers={"authorization": f"Bearer {OPS}"})

    def thief(i: int) -> dict[str, Any]:
        body = doc("route-thief", at(-60 + i), seed=2)
        body["gpus"][0]["uuid"] = body["gpu_nic_affinity"][0]["gpu_uuid"] = owner["gpus"][0]["uuid"]
        return body

    del taken[:]
    short_way, fastapi_way = await both_ways(client, "/v1/hosts/route-thief/facts", thief, OPS)
    assert short_way == fastapi_way
    assert short_way[0] == 409 and taken == [True]


async def test_reservations_answer_alike_both_ways(secured: Secured, gateway: Gateway) -> None:
    """Place, reserve, renew and release (rest_reservations.py), each request sent both ways."""
    client, taken = secured
    await load(gateway, "l40s:hosts=2")
    sched = {"authorization": f"Bearer {SCHEDULER}"}

    async def post(path: str, body: dict[str, Any] | bytes | None, headers: dict[str, str]) -> list[tuple[int, Any]]:
        out = []
        for content_type in (SHORT, FASTAPI_WAY):
            raw = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
            resp = await client.post(path, content=raw, headers={**headers, "content-type": content_type})
            out.append((resp.status_code, resp.json()))
        return out

    placed = without_clock_text(await post("/v1/place", {"request": "1xL40S"}, sched))
    assert placed[0] == placed[1] and placed[0][0] == 200 and placed[0][1]["candidates"]
    made = await post("/v1/reservations", {"holder": "job", "request": "1xL40S", "labels": ["a"]}, sched)
    assert [(s, b["kind"], sorted(b), len(b["gpus"])) for s, b in made] == [
        (200, "Reservation", sorted(made[0][1]), 1)
    ] * 2
    for (_, reservation), way in zip(made, (SHORT, FASTAPI_WAY), strict=True):
        headers = {**sched, "content-type": way}
        gone = await client.post(f"/v1/reservations/{reservation['id']}/release", headers=headers)
        assert (gone.status_code, gone.json()["kind"], gone.json()["state"]) == (200, "Reservation", "released")
    del taken[:]
    cases: list[tuple[str, dict[str, Any] | bytes | None, dict[str, str], int]] = [
        ("/v1/reservations", {"holder": "job", "request": "1xNOPE zz=1"}, sched, 200),  # ValidationError
        ("/v1/reservations", {"holder": "job", "request": "1xL40S"}, {}, 401),
        ("/v1/reservations", {"holder": "job", "request": "1xL40S"}, {"authorization": f"Bearer {COLLECTOR}"}, 403),
        ("/v1/reservations", {"holder": 5}, sched, 422),
        ("/v1/reservations", b'{"holder": "job", "priority": NaN}', sched, 400),
        ("/v1/reservations/nope/release", None, sched, 200),  # NotFound
        ("/v1/reservations/" + "x" * 300 + "/release", None, sched, 422),
        ("/v1/reservations/nope/renew", {"ttlSeconds": 60}, sched, 200),  # NotFound
        ("/v1/reservations/nope/renew", {"ttlSeconds": "60"}, sched, 422),
        ("/v1/reservations/nope/renew", {"ttl": 60}, sched, 422),
    ]
    for path, body, headers, status in cases:
        short_way, fastapi_way = await post(path, body, headers)
        assert short_way == fastapi_way, path
        assert short_way[0] == status, short_way
    # parse_model: NaN is left to the strict path; renew's body is optional (no short way: FastAPI's)
    assert taken == [True, True, True, False, False]


def deny() -> None:
    raise HTTPException(status_code=418, detail="an inclusion's own dependency ran")


async def test_an_inclusions_dependencies_and_the_apps_overrides_are_honoured(gateway: Gateway) -> None:
    """FastAPI builds an included route's handler in its inclusion's context (its dependencies);
    dependency overrides apply per app. The short way must see both, as FastAPI's way does."""
    await load(gateway, "l40s:hosts=1")
    app = create_app(Settings(insecure_dev=True), gateway=gateway)
    app.include_router(rest_reservations.router, prefix="/guarded", dependencies=[Depends(deny)])
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    body = b'{"request": "1xL40S"}'
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        for way in (SHORT, FASTAPI_WAY):
            assert (await c.post("/guarded/v1/place", content=body, headers={"content-type": way})).status_code == 418
            assert (await c.post("/v1/place", content=body, headers={"content-type": way})).status_code == 200
        app.dependency_overrides[caller] = lambda: Principal("collector-only", Role.COLLECTOR)
        for way in (SHORT, FASTAPI_WAY):
            assert (await c.post("/v1/place", content=body, headers={"content-type": way})).status_code == 403


async def post_cut_short(app: Any, content_type: str) -> list[int]:
    """POST /v1/place whose client goes away after a few bytes of the body; the statuses sent."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"requ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/place",
        "raw_path": b"/v1/place",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", content_type.encode()), (b"host", b"testserver")],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1),
    }
    await app(scope, receive, send)
    return [m["status"] for m in sent if m["type"] == "http.response.start"]


async def test_a_client_gone_mid_body_is_answered_as_fastapi_answers_it(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """A 400 both ways, and nothing logged as an unexpected error (it is not one)."""
    app = create_app(Settings(insecure_dev=True), gateway=gateway)
    for way in (SHORT, FASTAPI_WAY):
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            assert await post_cut_short(app, way) == [400], way
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], way


def test_a_plain_function_endpoint_is_left_to_fastapi() -> None:
    """The short way awaits its endpoint: a `def` endpoint keeps FastAPI's handler."""
    router = APIRouter(route_class=one_pass_route({caller: authenticate}))

    @router.get("/plain")
    def plain() -> dict[str, str]:
        return {"ok": "yes"}

    route = router.routes[0]
    assert isinstance(route, OnePassRoute) and route._short_way() is None
