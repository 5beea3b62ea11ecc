"""A statement held open in a Neo4j transaction, for making Neo4j-only races deterministic.

The held statement runs in an explicit transaction: it has written and holds its locks, and has
not committed. The statement under test starts, reads (the held write is not visible yet) and
blocks on a lock the held one has; only when Neo4j reports it blocked does the held one commit.
What the statement under test does next shows whether it reads again after its locks. FalkorDB
runs writes one at a time, so these interleavings cannot happen there. The `neo` fixture
(tests/conftest.py) gives the gateway and the server.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

from neo4j import AsyncGraphDatabase

from graphsvc.store.queries import default_registry
from tests.stores import Neo4jServer

T = TypeVar("T")
HELD = "SHOW TRANSACTIONS YIELD transactionId, metaData WHERE metaData.held_statement = $tag RETURN transactionId"
# Blocked by the held transaction, not by any other ("Blocked by: [neo4j-transaction-8, ...]"): a
# server shared by both test workers (GRAPHSVC_TEST_NEO4J_URI) may have others blocked.
BLOCKED = (
    "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' "
    "AND (status CONTAINS $held + ']' OR status CONTAINS $held + ',') RETURN count(*) AS n"
)


class HeldStatement:
    """A named statement in an open transaction: written, locks held, not committed."""

    def __init__(self, server: Neo4jServer) -> None:
        self.driver = AsyncGraphDatabase.driver(server.uri, auth=(server.user, server.password))
        self.session: Any = None
        self.tx: Any = None
        self.tag = secrets.token_hex(8)

    async def start(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run `name` in a new transaction and leave it open; its rows (the caller checks that it wrote)."""
        self.session = self.driver.session()
        self.tx = await self.session.begin_transaction(metadata={"held_statement": self.tag})
        rows: list[dict[str, Any]] = await (await self.tx.run(default_registry()[name].text, params)).data()
        return rows

    async def commit_when_blocked(self, other: Awaitable[T]) -> T:
        """Start `other`, wait until Neo4j reports it blocked on a lock, commit the held statement, finish `other`."""
        async with self.driver.session() as watch:
            held = await (await watch.run(HELD, tag=self.tag)).single()
            assert held is not None, "the held transaction is not open"
            task = asyncio.ensure_future(other)
            while True:
                assert not task.done(), f"the other statement finished without waiting: {task.result()}"
                rows = await (await watch.run(BLOCKED, held=held["transactionId"])).single()
                if rows is not None and rows["n"] > 0:
                    break
                await asyncio.sleep(0.05)
        await self.tx.commit()
        return await task

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.driver.close()
