"""Neo4j 5 through the official async driver, with managed transactions.

Neo4j runs read committed. The named write queries take their write locks first (a
``SET`` on the nodes they will change, in one global order: GPUs by uuid, then hosts, NVLink
domains and leaves) and only then read what they decide on, so a check and its write see
the same state. Deadlocks and other transient failures are retried by the managed
transaction a bounded time (``max_retry_s``), so every named write must be safe to repeat:
they are MERGE-based or conditional. Failures are mapped by Neo4j's status code, never by
message text. All sessions share the driver's bookmark manager, so a read that follows a
write (from any request of this process) sees it, also on a cluster with read replicas.

Plans and the time budget: Neo4j plans a statement inside its transaction, so planning counts
against the transaction timeout. It caches a plan under the statement (its syntax tree: a text
that differs only in comments reuses the plan, measured 2026-12-07) and its parameters' types,
where a string's or a list's type carries its size rounded up to a power of ten (`plan_key`):
the first host document of each kind (8 GPUs, 4, none with MIG slices) is a new plan of
`ingest_host`. A plan of the largest statements took 2-4 s on a quiet machine and 8-11 s
with both cores busy on a cold server, past the 10 s budget: the statement was killed and the
request failed (CI, 2026-12-06). So the first run of each plan key in this process gets
`plan_allowance_s` more; later runs get the budget alone (docs/store.md, "Neo4j plans inside
the budget").

An outage: the managed transaction retries a refused connection too, for `max_retry_s` and its
back-off, ~7 s a request. After a statement found the server unreachable, the next ones try one
connection first (`ping`, ~10 ms to be refused) until one succeeds: only the first request of an
outage waits out the retries.

A transaction Neo4j terminates is reported with a code saying only that: `Terminated`, or
`LockClientStopped` when it was waiting for a lock (a write queued behind a long one). One
that ran its whole budget was stopped by the timeout and is a StoreTimeoutError; one stopped
sooner (an operator's TERMINATE TRANSACTION, a database stopping) is a StoreBusyError. Both
were a StoreQueryError before, which the API masks as an internal error.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections.abc import Hashable, Mapping
from typing import Any

import neo4j
from neo4j import AsyncGraphDatabase, AsyncManagedTransaction
from neo4j import exceptions as neo4j_errors

from graphsvc.store.backend import Row
from graphsvc.store.errors import (
    StoreBusyError,
    StoreConstraintError,
    StoreQueryError,
    StoreTimeoutError,
    StoreUnavailableError,
    StoreVersionError,
)
from graphsvc.store.queries import NamedQuery
from graphsvc.store.schema import GraphSchema

log = logging.getLogger(__name__)

# Subqueries name what they import with a scope clause, `CALL (names) {` (graphsvc/store/queries.py,
# "Dialect"), which Neo4j reads from 5.23 on; an older server would refuse every placement statement.
MIN_NEO4J = (5, 23)


def neo4j_version_problem(agent: str) -> str | None:
    """Why a server that calls itself `agent` ("Neo4j/5.26.0") cannot run this service's queries
    (None: it can, or its version is not stated: a managed service may say only "Neo4j/5")."""
    m = re.fullmatch(r"Neo4j/(\d+)\.(\d+)(?:\.\S*)?", agent.strip())
    if m is None:
        return None
    found = (int(m.group(1)), int(m.group(2)))
    if found >= MIN_NEO4J:
        return None
    return (
        f"this service needs Neo4j {MIN_NEO4J[0]}.{MIN_NEO4J[1]} or later (its queries use CALL (x) {{ }} "
        f"subqueries); the server is {agent.strip()}"
    )


CONSTRAINT_CODES = frozenset({"Neo.ClientError.Schema.ConstraintValidationFailed"})
TIMEOUT_CODES = frozenset(
    {
        "Neo.ClientError.Transaction.TransactionTimedOut",
        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
        "Neo.TransientError.Transaction.LockAcquisitionTimeout",
    }
)


# The transaction was stopped: by its timeout, by an operator, or by the database stopping. The
# driver reports Neo4j's transient forms of the first two as these client errors (not retried).
TERMINATED_CODES = frozenset(
    {
        "Neo.ClientError.Transaction.Terminated",
        "Neo.ClientError.Transaction.LockClientStopped",
        "Neo.TransientError.Transaction.Terminated",
        "Neo.TransientError.Transaction.LockClientStopped",
    }
)

# Plan keys this process has seen succeed, at most this many (then forgotten all at once: the
# price is one more allowance per statement, not a wrong answer).
PLAN_KEYS_KEPT = 4096


def size_bucket(size: int) -> int:
    """Neo4j's size hint for a string or list parameter (SizeBucket): exact for 0 and 1, else the
    next power of ten (30 and 100 share a plan, 101 does not)."""
    if size <= 1:
        return size
    bucket = 10
    while bucket < size:
        bucket *= 10
    return bucket


def _type_key(value: object) -> Hashable:
    if isinstance(value, str):
        return ("string", size_bucket(len(value)))
    if isinstance(value, list | tuple):
        texts = bool(value) and all(isinstance(v, str) for v in value)
        return ("list<string>" if texts else "list", size_bucket(len(value)))
    if value is None:
        return "any"
    if isinstance(value, Mapping):
        return "map"
    return type(value).__name__  # bool, int, float


def plan_key(name: str, params: Mapping[str, Any]) -> Hashable:
    """What Neo4j caches a statement's plan under, besides its text (one text per name): each
    parameter's type, strings and lists with their size bucket. Two calls with one key share a
    plan; a new key is planned inside its transaction's time budget."""
    return (name, tuple(sorted((key, _type_key(value)) for key, value in params.items())))


# Under read committed a statement can reach a node (by an index, an edge) that another
# transaction deletes and commits before this one reads its properties or locks it: Neo4j then
# fails the statement with this client error (the history pruner deleting ended reservations
# while the reaper or a second replica's pruner reads them). Nothing was written: it runs again,
# a few times after a short random wait, and meets the node gone.
ENTITY_GONE = "Neo.ClientError.Statement.EntityNotFound"
ENTITY_GONE_ATTEMPTS = 4


def map_neo4j_error(query: str, exc: Exception, *, ran_s: float = 0.0, budget_s: float | None = None) -> Exception:
    """The typed store error for a driver exception, decided by its Neo4j status code. A
    terminated transaction is a timeout only if it ran its budget (`ran_s` >= `budget_s`)."""
    code = getattr(exc, "code", None) or ""
    message = getattr(exc, "message", None) or str(exc)
    if code in CONSTRAINT_CODES:
        return StoreConstraintError(query, message)
    if code in TIMEOUT_CODES:
        return StoreTimeoutError(query, message)
    if code in TERMINATED_CODES:
        if budget_s is not None and ran_s >= budget_s:
            return StoreTimeoutError(query, f"stopped after its {budget_s:g} s budget ({code}): {message}")
        return StoreBusyError(f"Neo4j stopped the transaction of query {query!r} before its budget ({code}): {message}")
    if isinstance(exc, neo4j_errors.ServiceUnavailable | neo4j_errors.SessionExpired | OSError):
        return StoreUnavailableError(f"Neo4j is unreachable: {message}")
    if isinstance(exc, neo4j_errors.TransientError):
        return StoreBusyError(f"Neo4j stayed busy for query {query!r} ({code}): {message}")
    if isinstance(exc, neo4j_errors.DriverError):
        return StoreUnavailableError(f"Neo4j driver failed for query {query!r}: {message}")
    return StoreQueryError(query, f"{code}: {message}" if code else message)


class Neo4jBackend:
    kind = "neo4j"
    serial_writes = False  # concurrent transactions, read committed

    def __init__(
        self,
        uri: str,
        *,
        user: str,
        password: str,
        database: str = "neo4j",
        max_connections: int = 64,
        max_retry_s: float = 5.0,
        connect_timeout_s: float = 3.0,
        queue_timeout_s: float = 30.0,
        plan_allowance_s: float = 50.0,
    ) -> None:
        self._uri = uri
        self._auth = (user, password)
        self._database = database
        self._max_connections = max_connections
        self._max_retry_s = max_retry_s
        self._connect_timeout_s = connect_timeout_s
        self._queue_timeout_s = queue_timeout_s
        self._driver: neo4j.AsyncDriver | None = None
        # Callers queue here (bounded wait, then a clear "busy" error) rather than inside the
        # driver's pool, whose time-out would surface as an unexplained client error.
        self._slots = asyncio.Semaphore(max_connections)
        self._plan_allowance_s = plan_allowance_s
        self._planned: set[Hashable] = set()  # plan keys that ran to the end here (module docstring)
        # Set when a statement found the server unreachable: until one connection succeeds again,
        # a statement first tries one connection (refused in milliseconds while the server is
        # down) instead of the managed transaction's retries, which spent `max_retry_s` and more
        # on each request of an outage (7 s a call, measured): the first request of an outage
        # rides out a blip, the later ones answer "unavailable" at once.
        self._unreachable = False

    async def open(self) -> None:
        self._driver = AsyncGraphDatabase.driver(
            self._uri,
            auth=self._auth,
            max_connection_pool_size=self._max_connections,
            # Bounded: while the server is down a request answers StoreUnavailable in seconds, not a hang.
            max_transaction_retry_time=self._max_retry_s,
            connection_timeout=self._connect_timeout_s,
            connection_acquisition_timeout=60.0,  # never reached: self._slots admits at most the pool size
            notifications_min_severity="OFF",  # deprecations are caught by the Cypher lint test instead
        )
        await self.ping()
        try:
            agent = (await self._drv().get_server_info()).agent
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise StoreUnavailableError(f"Neo4j is unreachable: {exc}") from exc
        problem = neo4j_version_problem(agent)
        if problem is not None:
            raise StoreVersionError(problem)

    async def close(self) -> None:
        if self._driver is not None:
            await self._driver.close()
            self._driver = None

    def _drv(self) -> neo4j.AsyncDriver:
        if self._driver is None:
            raise StoreUnavailableError("Neo4j driver is not open")
        return self._driver

    def _session(self) -> neo4j.AsyncSession:
        driver = self._drv()
        # One bookmark manager for every session: read-your-writes across requests and sessions.
        return driver.session(database=self._database, bookmark_manager=driver.execute_query_bookmark_manager)

    async def ping(self) -> None:
        try:
            await self._drv().verify_connectivity()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            self._unreachable = True
            raise StoreUnavailableError(f"Neo4j is unreachable: {exc}") from exc
        self._unreachable = False

    async def run(self, query: NamedQuery, params: Mapping[str, Any], *, write: bool, timeout_s: float) -> list[Row]:
        args = dict(params)
        key = plan_key(query.name, args)
        first = key not in self._planned
        budget_s = timeout_s + self._plan_allowance_s if first else timeout_s

        @neo4j.unit_of_work(timeout=budget_s, metadata={"query": query.name})
        async def work(tx: AsyncManagedTransaction) -> list[Row]:
            result = await tx.run(query.neo4j_text, args)
            return [dict(record) for record in await result.data()]

        try:
            async with asyncio.timeout(self._queue_timeout_s):
                await self._slots.acquire()
        except TimeoutError:
            raise StoreBusyError(
                f"the store is busy: query {query.name!r} waited {self._queue_timeout_s:.0f} s "
                f"for one of {self._max_connections} connections"
            ) from None
        started = time.perf_counter()
        try:
            if self._unreachable:
                await self.ping()  # still down: StoreUnavailableError now, without the retries
            for attempt in range(1, ENTITY_GONE_ATTEMPTS + 1):
                try:
                    async with self._session() as session:
                        rows = await (session.execute_write(work) if write else session.execute_read(work))
                    self._remember_plan(key, query.name, first, time.perf_counter() - started, timeout_s)
                    return rows
                except neo4j_errors.Neo4jError as exc:
                    if exc.code != ENTITY_GONE or attempt == ENTITY_GONE_ATTEMPTS:
                        raise
                    log.info("query=%s reached a node deleted meanwhile (attempt %d); run again", query.name, attempt)
                    # Apart from a twin racing for the same nodes (two replicas' pruners, one tick).
                    await asyncio.sleep(random.uniform(0.01, 0.05) * attempt)
            raise AssertionError("unreachable: the last attempt returns or raises")
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            mapped = map_neo4j_error(query.name, exc, ran_s=time.perf_counter() - started, budget_s=budget_s)
            if isinstance(mapped, StoreUnavailableError):
                self._unreachable = True
            raise mapped from exc
        finally:
            self._slots.release()

    def _remember_plan(self, key: Hashable, name: str, first: bool, ran_s: float, timeout_s: float) -> None:
        if not first:
            return
        if len(self._planned) >= PLAN_KEYS_KEPT:
            self._planned.clear()
        self._planned.add(key)
        if ran_s > timeout_s:
            log.info(
                "query=%s ran %.1f s, over its %g s budget, in its first run here (Neo4j planned it then)",
                name,
                ran_s,
                timeout_s,
            )

    async def apply_ddl(self, schema: GraphSchema) -> None:
        """Create the schema's constraints and indexes that the database lacks (by name; what
        `IF NOT EXISTS` would skip anyway), then wait for any not yet online. Each statement is a
        schema transaction: sending all ~45 again cost ~0.3 s at every start (and before every
        Neo4j test, whose reset keeps the schema)."""
        try:
            async with self._session() as session:
                constraints = await (await session.run("SHOW CONSTRAINTS YIELD name")).data()
                indexes = await (await session.run("SHOW INDEXES YIELD name, state")).data()
                present = {("constraint", r["name"]) for r in constraints} | {("index", r["name"]) for r in indexes}
                created = False
                for kind, name, statement in schema.neo4j_ddl_named():
                    if (kind, name) not in present:
                        # Generated from the declared schema, never from input.
                        await (await session.run(statement)).consume()
                        created = True
                # Constraints and indexes build in the background: writes must not start before they hold.
                if created or any(r["state"] != "ONLINE" for r in indexes):
                    await (await session.run("CALL db.awaitIndexes(300)")).consume()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise map_neo4j_error("ddl", exc) from exc
