"""Brings a stored graph forward to GRAPH_VERSION.

Each migration is a named query ``migrations/NNNN_what.cypher``; number N takes a
graph from version N-1 to N. Migrations must be idempotent: the version is
recorded after each one, so a crash between the two only repeats that one.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from graphsvc.store.errors import GraphVersionError
from graphsvc.store.gateway import Gateway
from graphsvc.store.schema import GraphSchema, graph_schema

log = logging.getLogger(__name__)

# Version 1 is the initial model: indexes and constraints only, no data step.
BASE_VERSION = 1


@dataclass(frozen=True)
class MigrationReport:
    from_version: int
    to_version: int
    applied: tuple[str, ...]


async def stored_version(gateway: Gateway) -> int | None:
    rows = await gateway.read("meta_version")
    return int(rows[0]["version"]) if rows and rows[0]["version"] is not None else None


async def migrate(gateway: Gateway, schema: GraphSchema | None = None) -> MigrationReport:
    schema = schema or graph_schema()
    await gateway.backend.apply_ddl(schema)
    current = await stored_version(gateway)
    if current is None:
        fresh = not (await gateway.read("graph_is_empty"))[0]["has_nodes"]
        # An empty graph starts at the newest version; an unversioned graph with
        # data predates versioning and is treated as the base version.
        current = schema.version if fresh else BASE_VERSION
        await gateway.write("meta_set_version", {"version": current, "now": time.time()})
    if current > schema.version:
        raise GraphVersionError(
            f"the stored graph is at version {current}, newer than this service ({schema.version}); "
            "upgrade the service instead of downgrading the graph"
        )
    start = current
    applied: list[str] = []
    steps: dict[int, list[str]] = {}
    for number, query in gateway.registry.migrations():
        steps.setdefault(number, []).append(query.name)
    for number in sorted(steps):
        if current < number <= schema.version:
            for name in steps[number]:
                log.info("migrating graph %d -> %d with %s", number - 1, number, name)
                await gateway.write(name)
                applied.append(name)
            await gateway.write("meta_set_version", {"version": number, "now": time.time()})
            current = number
    if current != schema.version:
        raise GraphVersionError(f"no migration brings the graph from version {current} to {schema.version}")
    return MigrationReport(start, current, tuple(applied))
