"""One write per response (graphsvc/api/http_protocol.py): the writes of one event-loop turn go
to the connection as one, in order, and a close sends what is buffered first."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from graphsvc.api.http_protocol import FLUSH_AT, CoalescingTransport
from tests.faults.live import serving


class Recording:
    """A transport that records what reaches the connection."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False
        self.extra = {"peername": ("127.0.0.1", 1)}

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.sent.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.extra.get(name, default)


def coalescing() -> tuple[CoalescingTransport, Recording]:
    inner = Recording()
    return CoalescingTransport(inner, asyncio.get_running_loop()), inner  # type: ignore[arg-type]


async def test_a_head_and_body_written_in_one_turn_go_out_as_one_write() -> None:
    t, inner = coalescing()
    t.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    t.write(b"{}")
    assert inner.sent == []  # nothing before the turn ends
    assert t.get_write_buffer_size() == 40
    await asyncio.sleep(0)
    assert inner.sent == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


async def test_writes_of_later_turns_go_out_in_order() -> None:
    t, inner = coalescing()
    t.write(b"a")
    await asyncio.sleep(0)
    t.writelines([b"b", bytearray(b"c"), memoryview(b"d")])
    await asyncio.sleep(0)
    t.write(b"e")
    await asyncio.sleep(0)
    assert inner.sent == [b"a", b"bcd", b"e"]


async def test_a_close_sends_what_is_buffered_first() -> None:
    t, inner = coalescing()
    t.write(b"last answer")
    t.close()
    assert inner.sent == [b"last answer"] and inner.closed
    await asyncio.sleep(0)  # the turn's flush finds nothing more to send, and never writes after close
    assert inner.sent == [b"last answer"]


async def test_nothing_is_written_to_a_connection_already_closing() -> None:
    t, inner = coalescing()
    t.write(b"to a peer that left")
    inner.closed = True
    await asyncio.sleep(0)
    assert inner.sent == []


async def test_everything_else_is_the_connection_s_own() -> None:
    t, _ = coalescing()
    assert t.get_extra_info("peername") == ("127.0.0.1", 1)
    assert t.is_closing() is False


async def test_a_large_write_goes_out_at_once_after_what_was_buffered() -> None:
    """A large body is not held for the turn nor copied into a joined one; a turn whose small
    writes add up to FLUSH_AT sends them then, so a long stream still meets flow control."""
    t, inner = coalescing()
    t.write(b"head")
    t.write(b"x" * FLUSH_AT)
    assert inner.sent == [b"head", b"x" * FLUSH_AT]
    for _ in range(FLUSH_AT // 1024):
        t.write(b"y" * 1024)
    assert inner.sent[2:] == [b"y" * FLUSH_AT] and t.get_write_buffer_size() == 0
    await asyncio.sleep(0)
    assert len(inner.sent) == 3


async def answer(scope: Any, receive: Any, send: Any) -> None:
    """A plain ASGI app: a small JSON answer, head and body in one turn."""
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"12")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"ok": true}'})


def ask(port: int, *, half_close: bool) -> bytes:
    """One request from a blocking socket (another thread, as a client process would be)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
        if half_close:
            s.shutdown(socket.SHUT_WR)
        data = b""
        while not data.endswith(b'{"ok": true}'):
            got = s.recv(65536)
            if not got:
                break
            data += got
        return data


@pytest.mark.parametrize("half_close", [False, True])
async def test_a_real_server_answers_also_a_client_that_half_closed(half_close: bool) -> None:
    """uvicorn with this protocol on a socket. A client that sends its request and then shuts its
    side (the transport closes itself right after the end of file, before the turn's writes went
    out) still gets its whole answer, every time."""
    async with serving(answer) as address:
        port = int(address.rsplit(":", 1)[1])
        for _ in range(20):
            data = await asyncio.to_thread(ask, port, half_close=half_close)
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200") and body == b'{"ok": true}', data
