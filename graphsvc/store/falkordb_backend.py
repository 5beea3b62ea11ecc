"""FalkorDB over the redis protocol (unix socket for the embedded store, TCP for an external one).

Every named query is one GRAPH.QUERY (or GRAPH.RO_QUERY for reads, which the server
refuses to let write). FalkorDB runs each query atomically: a query that fails part
way leaves the graph as it was, which is what makes a host's ingest all-or-nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from falkordb.asyncio import FalkorDB
from falkordb.asyncio.query_result import QueryResult
from redis import exceptions as redis_errors
from redis.asyncio import BlockingConnectionPool, Connection, UnixDomainSocketConnection

from graphsvc.store.backend import Row
from graphsvc.store.errors import (
    StoreBusyError,
    StoreConstraintError,
    StoreQueryError,
    StoreTimeoutError,
    StoreUnavailableError,
    UnrepresentableParameter,
)
from graphsvc.store.falkordb_reply import parse_rows
from graphsvc.store.queries import NamedQuery
from graphsvc.store.schema import GraphSchema

log = logging.getLogger(__name__)


_SCALARS = (str, int, float, bool, type(None))


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {k: _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


def _plain(value: Any) -> Any:
    """FalkorDB hands back OrderedDicts and Node objects; callers want plain data."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    props = getattr(value, "properties", None)
    if isinstance(props, Mapping):
        return _plain(props)
    return value


class FalkorBackend:
    kind = "falkordb"
    serial_writes = True  # one writer at a time per graph (docs.falkordb.com/design/concurrency)

    def __init__(
        self,
        graph: str,
        *,
        unix_socket: str | None = None,
        host: str = "127.0.0.1",
        port: int = 6379,
        password: str | None = None,
        max_connections: int | None = None,
        queue_timeout_s: float = 30.0,
        socket_timeout_s: float = 75.0,
        kind: str = "falkordb",
    ) -> None:
        self.kind = kind
        self.graph_name = graph
        self._socket = unix_socket
        self._host, self._port, self._password = host, port, password
        self._max_connections = max_connections
        self._queue_timeout_s = queue_timeout_s
        # Longer than any query's own time budget (60 s at most), so a slow query ends as the
        # server's timeout error, never as a dropped socket ("unreachable").
        self._socket_timeout_s = socket_timeout_s
        self._pool: BlockingConnectionPool | None = None
        self._db: FalkorDB | None = None
        self._slots: asyncio.Semaphore | None = None
        self.connections = 0

    async def open(self) -> None:
        self.connections = self._max_connections or 4
        self._connect(self.connections)
        await self.ping()
        if self._max_connections is None:
            # Sized from the server: FalkorDB runs THREAD_COUNT queries at once (writes one at a
            # time); more connections only queue inside the server, where a wait is invisible.
            threads = await self._server_threads()
            wanted = max(4, 2 * threads + 2)
            if wanted != self.connections:
                await self.close()
                self.connections = wanted
                self._connect(wanted)
        self._slots = asyncio.Semaphore(self.connections)

    @property
    def all_connections_taken(self) -> bool:
        """Whether every connection runs a statement now, so the next caller queues (the fault
        tests wait for this instead of for a slow query to be slow enough)."""
        return self._slots is not None and self._slots.locked()

    def _connect(self, connections: int) -> None:
        common: dict[str, Any] = {
            "max_connections": connections,
            "timeout": None,  # callers queue on self._slots, with a bounded wait, before they take one
            "decode_responses": True,
            "password": self._password,
            "socket_connect_timeout": 5,
            "socket_timeout": self._socket_timeout_s,
        }
        if self._socket:
            self._pool = BlockingConnectionPool(
                connection_class=UnixDomainSocketConnection, path=self._socket, **common
            )
        else:
            self._pool = BlockingConnectionPool(connection_class=Connection, host=self._host, port=self._port, **common)
        try:
            self._db = FalkorDB(connection_pool=self._pool)
        except (redis_errors.ConnectionError, OSError) as exc:
            raise StoreUnavailableError(f"FalkorDB is unreachable: {exc}") from exc

    async def _server_threads(self) -> int:
        try:
            reply = await self._database().connection.execute_command("GRAPH.CONFIG", "GET", "THREAD_COUNT")
            return max(1, int(reply[1]))
        except (redis_errors.RedisError, OSError, ValueError, IndexError, TypeError):
            return 1

    async def plan_cache_size(self) -> int | None:
        """The server's CACHE_SIZE: how many compiled plans it keeps per thread (None: not known)."""
        try:
            reply = await self._database().connection.execute_command("GRAPH.CONFIG", "GET", "CACHE_SIZE")
            return int(reply[1])
        except (redis_errors.RedisError, OSError, ValueError, IndexError, TypeError) as exc:
            # A managed server may refuse GRAPH.CONFIG (an ACL): the service runs, unchecked.
            log.info("FalkorDB's plan cache size (CACHE_SIZE) could not be read, so it is not checked: %s", exc)
            return None

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
            self._db = None

    def _database(self) -> FalkorDB:
        if self._db is None:
            raise StoreUnavailableError("FalkorDB connection is not open")
        return self._db

    async def ping(self) -> None:
        try:
            await self._database().connection.ping()
        except (redis_errors.ConnectionError, OSError) as exc:
            raise StoreUnavailableError(f"FalkorDB is unreachable: {exc}") from exc

    async def run(self, query: NamedQuery, params: Mapping[str, Any], *, write: bool, timeout_s: float) -> list[Row]:
        started = time.monotonic()
        try:
            return await self._run_once(query, params, write=write, timeout_s=timeout_s)
        except StoreTimeoutError:
            # A read FalkorDB said timed out well inside its budget is asked once more, with what
            # is left of it: a CI run saw "Query timed out" 2.1 s into a 10 s budget on a small
            # graph (not reproduced since). A read changes nothing, so asking again is safe; a
            # read that used its budget, and any write, fail as they are.
            left = timeout_s - (time.monotonic() - started)
            if write or left < timeout_s / 2:
                raise
            log.warning("query=%s: FalkorDB reported a timeout %.1f s into a %.0f s budget; asked again",
                        query.name, timeout_s - left, timeout_s)  # fmt: skip
            return await self._run_once(query, params, write=write, timeout_s=left, queue_wait_s=left)

    async def _run_once(
        self,
        query: NamedQuery,
        params: Mapping[str, Any],
        *,
        write: bool,
        timeout_s: float,
        queue_wait_s: float | None = None,
    ) -> list[Row]:
        """One statement; `queue_wait_s` bounds the wait for a connection (the store's queue
        timeout unless given: a retry waits no longer than what is left of its budget)."""
        graph = self._database().select_graph(self.graph_name)
        # The parameters as the statement's header; a NUL in any string shows in it, so the
        # header is searched (C speed), the parameters walked only when it holds one.
        text = graph._build_params_header(dict(params)) + query.falkordb_text
        if "\x00" in text and _has_nul(params):
            if write:
                raise UnrepresentableParameter(query.name, "invalid input: a string contains a NUL character")
            # Nothing stored holds a NUL (ingest refuses control characters): a lookup by
            # such a string matches nothing, which U+FFFD (also never stored) reproduces.
            params = _without_nul(params)
            text = graph._build_params_header(dict(params)) + query.falkordb_text
        timeout_ms = max(1, int(timeout_s * 1000))
        slots = self._slots
        if slots is None:
            raise StoreUnavailableError("FalkorDB connection is not open")
        wait = self._queue_timeout_s if queue_wait_s is None else queue_wait_s
        try:
            async with asyncio.timeout(wait):
                await slots.acquire()
        except TimeoutError:
            raise StoreBusyError(
                f"the store is busy: query {query.name!r} waited {wait:.0f} s for one of {self.connections} connections"
            ) from None
        try:
            # The compact reply, parsed here (falkordb_reply); falkordb-py's parser only for a
            # reply holding nodes, edges or other values that are not plain data.
            command = "GRAPH.QUERY" if write else "GRAPH.RO_QUERY"
            reply = await graph.execute_command(command, graph.name, text, "--compact", "timeout", timeout_ms)
            rows = parse_rows(reply)
            if rows is None:
                result = QueryResult(graph)
                await result.parse(reply)
        except redis_errors.ResponseError as exc:
            message = str(exc)
            if "timed out" in message.lower():
                raise StoreTimeoutError(query.name, message) from exc
            if "unique constraint violation" in message.lower():
                # FalkorDB replies carry no error codes; this reply text is its constraint error.
                raise StoreConstraintError(query.name, message) from exc
            raise StoreQueryError(query.name, message) from exc
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(f"FalkorDB is unreachable: {exc}") from exc
        finally:
            slots.release()
        if rows is not None:
            return rows
        header = [h[1] if isinstance(h, list | tuple) else h for h in (result.header or [])]
        return [
            {str(name): _plain(value) for name, value in zip(header, row, strict=True)}
            for row in result.result_set or []
        ]

    async def apply_ddl(self, schema: GraphSchema) -> None:
        db = self._database()
        graph = db.select_graph(self.graph_name)
        conn = db.connection
        constraints = await self._existing_constraints()
        wanted = schema.falkordb_unique_keys()
        # A graph made before stop 40 constrains the keys of the labels every reservation
        # writes; those constraints go (schema.falkordb_unique_keys says why), before the
        # indexes are checked, so a key index is there whatever dropping its constraint does.
        # Only declared keys are dropped: a constraint this service never made is left alone.
        for label, prop in sorted(set(schema.unique_keys()) - set(wanted)):
            if (label, prop) in constraints:
                if constraints[(label, prop)] == "FAILED":
                    # It never held: the stored graph has two nodes with one key. Said once, here;
                    # statements MERGE on the key, so the duplicates stay as they are.
                    log.warning("FalkorDB: unique constraint on %s.%s had failed (duplicate keys stored)", label, prop)
                await conn.execute_command(*self._constraint_command("DROP", label, prop))
        existing = await self._existing_indexes()
        for label, prop in schema.falkordb_indexes():
            if (label, prop) in existing:
                continue
            # Index DDL is generated from the declared schema, never from input.
            await graph.query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
            existing.add((label, prop))
        for label, prop in wanted:
            if (label, prop) not in constraints:
                await conn.execute_command(*self._constraint_command("CREATE", label, prop))
        await self._wait_constraints(schema)

    def _constraint_command(self, verb: str, label: str, prop: str) -> tuple[str | int, ...]:
        return ("GRAPH.CONSTRAINT", verb, self.graph_name, "UNIQUE", "NODE", label, "PROPERTIES", 1, prop)

    async def _existing_indexes(self) -> set[tuple[str, str]]:
        graph = self._database().select_graph(self.graph_name)
        try:
            result = await graph.ro_query("CALL db.indexes() YIELD label, properties RETURN label, properties")
        except redis_errors.ResponseError:
            return set()
        return {(row[0], p) for row in result.result_set for p in row[1]}

    async def _existing_constraints(self) -> dict[tuple[str, str], str]:
        graph = self._database().select_graph(self.graph_name)
        try:
            result = await graph.ro_query(
                "CALL db.constraints() YIELD type, label, properties, status RETURN type, label, properties, status"
            )
        except redis_errors.ResponseError:
            return {}
        return {(row[1], row[2][0]): row[3] for row in result.result_set if row[0] == "UNIQUE" and len(row[2]) == 1}

    async def _wait_constraints(self, schema: GraphSchema, timeout_s: float = 60.0) -> None:
        """Constraints build in the background; writes must not start before they hold."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        wanted = set(schema.falkordb_unique_keys())
        while True:
            states = await self._existing_constraints()
            failed = [k for k in wanted if states.get(k) == "FAILED"]
            if failed:
                raise StoreQueryError(
                    "ddl", f"unique constraints failed on {failed}: duplicate keys in the stored graph"
                )
            if all(states.get(k) == "OPERATIONAL" for k in wanted):
                return
            if loop.time() > deadline:
                raise StoreUnavailableError("FalkorDB constraints did not become operational in time")
            await asyncio.sleep(0.05)
