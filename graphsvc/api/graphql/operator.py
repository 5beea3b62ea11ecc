"""Operator repairs through GraphQL: things an SRE on call needs without a restart."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc.api.graphql.context import Info
from graphsvc.api.graphql.errors import NotFound
from graphsvc.api.graphql.reservations import Conflict, ReservationHolder
from graphsvc.api.graphql.types import GPU, HostRef, wrap
from graphsvc.ingest.freshness import HostFreshnessReset, plausible_host_name
from graphsvc.ingest.removal import HostHeld, HostRemoved
from graphsvc.security.auth import Role

wrap(HostFreshnessReset, description="A host's collection times were forgotten; its next update is applied.")
wrap(
    HostRemoved,
    description="A host was removed with its GPUs, MIG slices, NICs and their cables, PCIe switches, NUMA nodes "
    "and NVSwitches; NVLink domains left with no GPU went too, and every counter it fed was recounted.",
    fields={
        "cables_removed": "Its NICs' cables to fabric switches (the switches stay)",
        "nvlink_domains_removed": "NVLink domains left with no GPU, removed",
        "nvlink_domains_recounted": "NVLink domains shared with other hosts (an NVL72 clique), recounted",
        "switches_recounted": "Fabric switches its NICs were cabled to, their free-GPU counters recounted",
        "racks_removed": "Its rack, when no other host was left in it",
        "clusters_removed": "Its cluster (1), when nothing was left in it: no rack, host, fabric switch or site "
        "naming it",
    },
)

ResetHostFreshnessResult = Annotated[HostFreshnessReset | NotFound, strawberry.union("ResetHostFreshnessResult")]
RemoveHostResult = Annotated[HostRemoved | NotFound | Conflict, strawberry.union("RemoveHostResult")]


def _not_found(host: str) -> NotFound:
    message = f"no host named {host!r}" if plausible_host_name(host) else "no host has such a name"
    return NotFound(id=host, message=message)


async def _held(info: Info, held: HostHeld) -> Conflict:
    """The refusal as reserve's Conflict: the GPUs held (a held MIG slice names its GPU) and who holds them."""
    uuids = sorted({h.gpu for h in held.holds})
    found = await info.context.services.browse.gpus_by_uuid(uuids)
    gpus = [GPU.of(n.gpu, HostRef(name=n.host)) for n in found]
    holders = [ReservationHolder(gpu_uuid=h.gpu, reservation=h.reservation, holder=h.holder) for h in held.holds]
    return Conflict(message=held.message, gpus=gpus, holders=holders)


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
            return _not_found(host)
        return reset

    @strawberry.mutation(
        description="Operators: decommission a host: remove it with everything its facts brought (GPUs, MIG "
        "slices, NICs and their cables, PCIe switches, NUMA nodes, NVLink domains left empty), in one write. "
        "Refused with Conflict, nothing changed, while a live reservation holds any of its GPUs or MIG slices. "
        "A collector still running on the host brings it back with its next facts."
    )
    async def remove_host(self, info: Info, name: str) -> RemoveHostResult:
        principal = info.context.require(Role.OPERATOR)
        info.context.limit_mutations()
        out = await info.context.services.remove_host(name, by=principal.name)
        if out is None:
            return _not_found(name)
        if isinstance(out, HostHeld):
            return await _held(info, out)
        return out
