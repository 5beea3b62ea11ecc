"""The embedded store's connections (#13.10): sized from the server, a bounded queue with a clear
"busy" error instead of "unreachable", and a socket time-out longer than any query's budget."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis

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
    """The pool's one connection is held by a write the server keeps waiting (CLIENT PAUSE WRITE,
    as during a failover) until the busy error has been seen: bounded by an event, not by how long
    a slow query happens to take on this machine."""
    backend = FalkorBackend(
        "pool_busy", unix_socket=str(embedded_server.socket_path), max_connections=1, queue_timeout_s=0.2
    )
    admin = redis.Redis(unix_socket_path=str(embedded_server.socket_path))
    await backend.open()
    try:
        gw = Gateway(backend)
        await migrate(gw)
        await admin.client_pause(600_000, all=False)  # writes only: UNPAUSE itself still runs
        held = asyncio.create_task(
            backend.run(adhoc("held", "CREATE (h:Held) RETURN 1 AS n"), {}, write=True, timeout_s=60)
        )
        while not held.done() and not backend.all_connections_taken:
            await asyncio.sleep(0.01)  # until the held write has taken the one connection
        with pytest.raises(StoreBusyError, match="busy"):
            await gw.read("graph_is_empty")
        assert not held.done()  # still waiting on the server: the busy error came from the queue
        await admin.client_unpause()
        assert await held == [{"n": 1}]
    finally:
        await admin.client_unpause()
        await admin.aclose()
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
