"""What the gateway needs from a graph database, whichever it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from graphsvc.store.queries import NamedQuery
from graphsvc.store.schema import GraphSchema

Row = dict[str, Any]


class Backend(Protocol):
    kind: str
    # True where the store runs write statements one at a time (FalkorDB): a write then reads
    # what every earlier write committed, so batches may be pipelined (store/group_commit.py).
    serial_writes: bool

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def ping(self) -> None: ...

    async def run(self, query: NamedQuery, params: Mapping[str, Any], *, write: bool, timeout_s: float) -> list[Row]:
        """Run one statement as one atomic transaction and return its rows as dicts."""
        ...

    async def apply_ddl(self, schema: GraphSchema) -> None:
        """Create the schema's indexes and unique constraints; safe to repeat."""
        ...
