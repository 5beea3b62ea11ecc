"""One write per response (graphsvc/api/http_protocol.py): the writes of one event-loop turn go
to the connection as one, in order, and a close sends what is buffered first."""

from __future__ import annotations

import asyncio
from typing import Any

from graphsvc.api.http_protocol import CoalescingTransport


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
