"""Neo4j 5 through the official async driver, with managed transactions.

Managed transactions retry transient failures (deadlocks, leader changes) with
backoff, so every named write query must be idempotent: they are MERGE-based.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import neo4j
from neo4j import AsyncGraphDatabase, AsyncManagedTransaction
from neo4j import exceptions as neo4j_errors

from graphsvc.store.backend import Row
from graphsvc.store.errors import StoreQueryError, StoreTimeoutError, StoreUnavailableError
from graphsvc.store.queries import NamedQuery
from graphsvc.store.schema import GraphSchema


class Neo4jBackend:
    kind = "neo4j"

    def __init__(
        self,
        uri: str,
        *,
        user: str,
        password: str,
        database: str = "neo4j",
        max_connections: int = 64,
    ) -> None:
        self._uri = uri
        self._auth = (user, password)
        self._database = database
        self._max_connections = max_connections
        self._driver: neo4j.AsyncDriver | None = None

    async def open(self) -> None:
        self._driver = AsyncGraphDatabase.driver(
            self._uri, auth=self._auth, max_connection_pool_size=self._max_connections
        )
        await self.ping()

    async def close(self) -> None:
        if self._driver is not None:
            await self._driver.close()
            self._driver = None

    def _drv(self) -> neo4j.AsyncDriver:
        if self._driver is None:
            raise StoreUnavailableError("Neo4j driver is not open")
        return self._driver

    async def ping(self) -> None:
        try:
            await self._drv().verify_connectivity()
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.AuthError, OSError) as exc:
            raise StoreUnavailableError(f"Neo4j is unreachable: {exc}") from exc

    async def run(self, query: NamedQuery, params: Mapping[str, Any], *, write: bool, timeout_s: float) -> list[Row]:
        args = dict(params)

        @neo4j.unit_of_work(timeout=timeout_s, metadata={"query": query.name})
        async def work(tx: AsyncManagedTransaction) -> list[Row]:
            result = await tx.run(query.text, args)
            return [dict(record) for record in await result.data()]

        try:
            async with self._drv().session(database=self._database) as session:
                if write:
                    return await session.execute_write(work)
                return await session.execute_read(work)
        except neo4j_errors.ClientError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Timeout" in code:
                raise StoreTimeoutError(query.name, exc.message or str(exc)) from exc
            raise StoreQueryError(query.name, exc.message or str(exc)) from exc
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError) as exc:
            raise StoreUnavailableError(f"Neo4j is unreachable: {exc}") from exc

    async def apply_ddl(self, schema: GraphSchema) -> None:
        async with self._drv().session(database=self._database) as session:
            for statement in schema.neo4j_ddl():
                # Generated from the declared schema, never from input.
                await session.run(statement)
