"""A real uvicorn server on a free port, in the test's own event loop.

Same loop as the test, so the app can share the test's gateway (its connections belong to
that loop); a real socket, so what only a real server does (flow control, websockets,
answering before the whole body arrived) is what the test sees; on the HTTP protocol `graphsvc
serve` runs (one write per answer, graphsvc/api/http_protocol.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from graphsvc.api.http_protocol import CoalescingHttpToolsProtocol


@asynccontextmanager
async def serving(app: Callable[..., Any]) -> AsyncIterator[str]:
    """Serve `app` (the service's FastAPI app, or any ASGI app) until the block ends; yields
    "127.0.0.1:PORT"."""
    # Port 0: the kernel picks a free port as the server binds (a port found free and bound later
    # could be taken in between by the other test process).
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", http=CoalescingHttpToolsProtocol
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(6000):  # a minute and more of polls: a start that hangs fails, never waits forever
        if server.started:
            break
        if task.done():
            task.result()  # raises what stopped it
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    else:
        server.should_exit = True
        await task
        raise RuntimeError("uvicorn did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
