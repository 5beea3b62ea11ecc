"""Operator repairs through GraphQL: things an SRE on call needs without a restart."""

from __future__ import annotations

import logging
from typing import Annotated

import strawberry

from graphsvc.api.graphql.context import Info
from graphsvc.api.graphql.reservations import NotFound
from graphsvc.security.auth import Role

log = logging.getLogger("graphsvc.operator")


@strawberry.type(description="A host's collection times were forgotten; its next update is applied.")
class HostFreshnessReset:
    host: str
    previous_collected_at: float | None
    previous_metrics_at: float | None


ResetHostFreshnessResult = Annotated[HostFreshnessReset | NotFound, strawberry.union("ResetHostFreshnessResult")]


@strawberry.type
class OperatorMutations:
    @strawberry.mutation(
        description="Operators: forget when a host's facts and metrics were collected, so its next update is "
        "applied whatever its collectedAt (repairs a host frozen by a collector clock that ran ahead)."
    )
    async def reset_host_freshness(self, info: Info, host: str) -> ResetHostFreshnessResult:
        principal = info.context.require(Role.OPERATOR)
        info.context.limit_mutations()
        if not 0 < len(host) <= 256 or any(ord(c) < 0x20 for c in host):
            # Ingest refuses such names, so no host has one (and a NUL cannot reach FalkorDB).
            return NotFound(id=host, message="no host has such a name")
        rows = await info.context.gateway.write("host_reset_freshness", {"host": host})
        if not rows:
            return NotFound(id=host, message=f"no host named {host!r}")
        row = rows[0]
        log_reset(principal.name, host, row.get("previous_collected_at"))
        return HostFreshnessReset(
            host=row["host"],
            previous_collected_at=row.get("previous_collected_at"),
            previous_metrics_at=row.get("previous_metrics_at"),
        )


def log_reset(who: str, host: str, previous: float | None) -> None:
    log.warning("host=%s freshness reset by %s (collected_at was %s)", host, who, previous)
