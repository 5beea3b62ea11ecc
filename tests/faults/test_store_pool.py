"""The embedded store's connections (#13.10): sized from the server, a bounded queue with a clear
"busy" error instead of "unreachable", and a socket time-out longer than any query's budget."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.store.embedded import EmbeddedFalkorDB
from graphsvc.store.errors import StoreBusyError, StoreTimeoutError
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from tests.stores import adhoc


async def test_pool_is_sized_from_the_server_and_queues(embedded_server: EmbeddedFalkorDB) -> None:
    backend = FalkorBackend("pool_sizing", unix_socket=str(embedded_server.socket_path))
    await backend.open()
    try:
        gw = Gateway(backend)
        await migrate(gw)
        assert backend.connections >= 4  # 2 x THREAD_COUNT + 2, at least 4
        # Ten times more concurrent callers than connections: they queue, none is refused.
        results = await asyncio.gather(*(gw.read("graph_is_empty") for _ in range(10 * backend.connections)))
        assert len(results) == 10 * backend.connections
    finally:
        await backend.close()


async def test_a_full_queue_is_a_busy_error_not_unreachable(embedded_server: EmbeddedFalkorDB) -> None:
    backend = FalkorBackend(
        "pool_busy", unix_socket=str(embedded_server.socket_path), max_connections=1, queue_timeout_s=0.2
    )
    await backend.open()
    try:
        gw = Gateway(backend)
        await migrate(gw)
        slow = asyncio.create_task(
            backend.run(
                adhoc("slow", "UNWIND range(1, 30000000) AS x RETURN count(x) AS n"), {}, write=False, timeout_s=30
            )
        )
        await asyncio.sleep(0.05)  # the one connection is taken by the slow query (~1-3 s: well past the 0.2 s wait)
        with pytest.raises(StoreBusyError, match="busy"):
            await gw.read("graph_is_empty")
        await slow
    finally:
        await backend.close()


async def test_a_slow_query_is_a_timeout_not_unreachable(embedded_server: EmbeddedFalkorDB) -> None:
    backend = FalkorBackend("pool_timeout", unix_socket=str(embedded_server.socket_path))
    await backend.open()
    try:
        await migrate(Gateway(backend))
        with pytest.raises(StoreTimeoutError):
            await backend.run(
                adhoc("too_slow", "UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x) AS n"),
                {},
                write=False,
                timeout_s=0.05,
            )
    finally:
        await backend.close()
