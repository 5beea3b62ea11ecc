"""The CLI's fact pushes survive a connection dropped before the answer (a keep-alive connection
the server closed as the request went out): the PUT is idempotent, so it is sent again, a
bounded number of times. A busy service (HTTP 503, or 429) is asked again too, a bounded number
of times with a growing pause: a cold store's first writes can run past the query timeout."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from graphsvc import cli
from graphsvc.cli import PUT_ATTEMPTS, _put_again_if_dropped
from graphsvc.synthetic.clusters import build
from tests.http_stand_in import answer


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


class StandIn(ThreadingHTTPServer):
    """A stand-in service: the first `busy` fact PUTs are answered `status` (a cold store's
    query timeout is a 503), every later one 200; it counts what it was sent."""

    def __init__(self, busy: int, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.busy, self.status, self.busy_headers = busy, status, headers or {}
        self.paths: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: StandIn

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        with self.server.lock:
            self.server.paths.append(self.path)
            busy = len(self.server.paths) <= self.server.busy
        if busy:
            self._answer(self.server.status, b'{"detail": "timed out"}', self.server.busy_headers)
        elif self.path == "/v1/fabric":
            self._answer(200, b'{"switches": 1, "links": 2}')
        else:
            self._answer(200, b'{"applied": true}')

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        answer(self, status, body, headers)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "BUSY_BACKOFF_S", 0.01, raising=False)


@contextlib.contextmanager
def stand_in(busy: int, status: int, headers: dict[str, str] | None = None) -> Iterator[StandIn]:
    server = StandIn(busy, status, headers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.usefixtures("fast_backoff")
async def test_a_busy_service_is_asked_again_and_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = build("dgx1")
    with stand_in(2, 503) as server:
        await cli.push_cluster(server.url, cluster, concurrency=1)
    hosts = [f"/v1/hosts/{h.hostname}/facts" for h in cluster.hosts]
    assert server.paths == [hosts[0], hosts[0], *hosts, "/v1/fabric"]
    err = capsys.readouterr().err
    assert err.count("busy") == 1 and "HTTP 503" in err and "retrying" in err


@pytest.mark.usefixtures("fast_backoff")
async def test_429_waits_as_retry_after_says() -> None:
    cluster = build("dgx1")
    with stand_in(1, 429, {"retry-after": "0"}) as server:
        await cli.push_cluster(server.url, cluster, concurrency=1)
    assert len(server.paths) == len(cluster.hosts) + 2


@pytest.mark.usefixtures("fast_backoff")
async def test_busy_for_too_long_and_other_errors_stay_fatal() -> None:
    cluster = build("dgx1")
    with stand_in(1000, 503) as server, pytest.raises(cli.CLIError, match=r"HTTP 503"):
        await cli.push_cluster(server.url, cluster, concurrency=1)
    assert len(server.paths) == cli.BUSY_ATTEMPTS
    for status in (500, 400, 409):
        with stand_in(1, status) as server, pytest.raises(cli.CLIError, match=f"HTTP {status}"):
            await cli.push_cluster(server.url, cluster, concurrency=1)
        assert len(server.paths) == 1
