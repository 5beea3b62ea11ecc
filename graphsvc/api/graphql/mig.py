"""GraphQL types for MIG slices: where a placement would put them, which a reservation holds."""

from __future__ import annotations

import strawberry

from graphsvc.placement.mig import FreeSlice, SliceCandidate
from graphsvc.read.hosts import HostSlice
from graphsvc.reservations.mig import ReservedSlice


@strawberry.type(description="A MIG GPU instance (3g.40gb): the unit a MIG-enabled GPU is handed out in.")
class MigSlice:
    uuid: str = strawberry.field(description="The MIG device uuid, what CUDA_VISIBLE_DEVICES takes")
    profile: str = strawberry.field(description="As nvidia-smi names it: 3g.40gb")
    gpu_instance_id: int | None
    memory_mib: int | None = strawberry.field(name="memoryMiB")
    gpu_uuid: str = strawberry.field(description="The MIG-enabled GPU it is part of")
    gpu_index: int
    gpu_model: str
    host: str
    held: bool | None = strawberry.field(
        default=None, description="In a reservation: whether it still holds the slice (null in a placement)"
    )
    state: str | None = strawberry.field(
        default=None, description="In a host's view: free or reserved (null in a placement or a reservation)"
    )
    reservation: str | None = strawberry.field(default=None, description="In a host's view: the reservation holding it")


@strawberry.type(description="A place MIG slices could be taken: on one GPU, one host, or several hosts.")
class MigSliceCandidate:
    rank: int
    slices: list[MigSlice]
    scope: str = strawberry.field(description="gpu (all on one GPU), host (one host) or hosts (several)")
    gpus: list[str] = strawberry.field(description="The uuids of the GPUs the slices are on")
    hosts: list[str]
    reason: str


def of_host(s: HostSlice, host: str) -> MigSlice:
    """A slice as a host's view shows it: with its state and holder."""
    return _slice(s, host, state=s.state, reservation=s.reservation)


def _slice(
    s: FreeSlice | ReservedSlice | HostSlice, host: str, *, state: str | None = None, reservation: str | None = None
) -> MigSlice:
    return MigSlice(
        uuid=s.uuid,
        profile=s.profile,
        gpu_instance_id=s.gpu_instance_id,
        memory_mib=s.memory_mib,
        gpu_uuid=s.gpu,
        gpu_index=s.gpu_index,
        gpu_model=s.gpu_model,
        host=host,
        held=s.held if isinstance(s, ReservedSlice) else None,
        state=state,
        reservation=reservation,
    )


def candidates(found: list[SliceCandidate]) -> list[MigSliceCandidate]:
    return [
        MigSliceCandidate(
            rank=rank,
            slices=[_slice(s, s.host) for s in c.slices],
            scope=c.scope.value,
            gpus=c.gpus,
            hosts=c.hosts,
            reason=c.reason,
        )
        for rank, c in enumerate(found, start=1)
    ]


def reserved(slices: list[ReservedSlice]) -> list[MigSlice]:
    return [_slice(s, s.host) for s in slices]
