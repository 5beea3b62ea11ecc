"""Operator repairs through GraphQL: things an SRE on call needs without a restart."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc.api.graphql.context import Info
from graphsvc.api.graphql.errors import NotFound
from graphsvc.api.graphql.types import wrap
from graphsvc.ingest.freshness import HostFreshnessReset, plausible_host_name
from graphsvc.security.auth import Role

wrap(HostFreshnessReset, description="A host's collection times were forgotten; its next update is applied.")

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
        reset = await info.context.services.reset_host_freshness(host, by=principal.name)
        if reset is None:
            message = f"no host named {host!r}" if plausible_host_name(host) else "no host has such a name"
            return NotFound(id=host, message=message)
        return reset
