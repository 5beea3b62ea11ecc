"""One write per response: uvicorn's HTTP/1.1 protocol with a response's head and body coalesced.

Uvicorn writes a response's status line and headers when the app starts the response, and its body
when the app sends it: two writes, so two TCP segments, and a client that reads the head first wakes
twice per answer. A scheduler's reserve or release is a small JSON answer sent head then body in
one turn of the event loop; here every write of one turn is joined and goes out at the end of that
turn, one system call and one segment (#15: reservations per second, docs/benchmarks.md "Stop 52").
Order is kept (every write goes through the same buffer) and nothing waits longer than the turn it
was written in. What is buffered goes out before the connection closes: on a close, on the peer's
end of file (a client that half-closes after its request still gets its answer: the transport
closes itself right after `eof_received`), and before a websocket upgrade, whose protocol then
writes to the connection directly. A turn that writes more than `FLUSH_AT` bytes sends them at
once, so a long stream still meets the transport's flow control (its pause when the kernel's
buffer is full) as it did, and a large body is not copied into a joined one.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

FLUSH_AT = 64 * 1024  # bytes buffered in one turn that go out at once (uvicorn's high-water mark)


class CoalescingTransport:
    """The connection's transport, with the writes of one event-loop turn sent as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.raw = transport  # the connection itself
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if len(data) >= FLUSH_AT:  # a large body: what is buffered, then the body as it is
            self.flush()
            self._send(data)
            return
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= FLUSH_AT:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._flush_turn)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush_turn(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._pending, self._size = [], 0
            self._send(data)

    def _send(self, data: bytes | bytearray | memoryview) -> None:
        if not self.raw.is_closing():  # a peer that left: nothing more goes out
            self.raw.write(data)

    def close(self) -> None:
        self.flush()
        self.raw.close()

    def write_eof(self) -> None:
        self.flush()
        self.raw.write_eof()

    def get_write_buffer_size(self) -> int:
        return self.raw.get_write_buffer_size() + self._size

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a `CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]

    def eof_received(self) -> None:
        # The transport closes itself once this returns: what this turn buffered goes first.
        self._flushed()
        super().eof_received()

    def handle_websocket_upgrade(self) -> None:
        # The websocket protocol gets the connection itself (its frames are written as it sends them).
        self.transport = self._flushed()
        super().handle_websocket_upgrade()

    def _flushed(self) -> asyncio.Transport:
        """The connection itself, once what this turn buffered has gone out."""
        transport: Any = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()
            return transport.raw
        return cast(asyncio.Transport, transport)
