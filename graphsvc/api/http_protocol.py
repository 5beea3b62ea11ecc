"""One write per response: uvicorn's HTTP/1.1 protocol with a response's head and body coalesced.

Uvicorn writes a response's status line and headers when the app starts the response, and its body
when the app sends it: two writes, so two TCP segments, and a client that reads the head first wakes
twice per answer. A scheduler's reserve or release is a small JSON answer sent head then body in
one turn of the event loop; here every write of one turn is joined and goes out at the end of that
turn, one system call and one segment (#15: reservations per second, docs/benchmarks.md "Stop 52").
Order is kept (every write goes through the same buffer) and nothing waits longer than the turn it
was written in; a close sends what is buffered first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport:
    """The connection's transport, with the writes of one event-loop turn sent as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._pending = []
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(d) for d in self._pending)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a `CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
