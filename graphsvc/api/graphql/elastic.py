"""GraphQL for jobs that change: resize, graceful preemption, failed-GPU replacement, phases.

Resolvers only translate: every decision is in graphsvc.reservations (resize.py,
preemption.py, replacement.py, phases.py), reached through `elastic_for`. Expected
outcomes are typed results sharing the reservation types; nothing here touches the store.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc.api.graphql.context import READERS, Info
from graphsvc.api.graphql.errors import NotFound, ValidationError
from graphsvc.api.graphql.inputs import PlacementRequestInput
from graphsvc.api.graphql.reservations import (
    Conflict,
    Infeasible,
    LeaseExpired,
    PreemptionVictim,
    Reservation,
    _conflict,
    _own,
    to_graphql,
)
from graphsvc.reservations import phases as ph
from graphsvc.reservations import preemption as pre
from graphsvc.reservations import resize as rz
from graphsvc.reservations import service as svc
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.layout import Slot
from graphsvc.security.auth import Role


@strawberry.type(description="The reservation after a resize, what moved, and whether its layout was kept.")
class Resized:
    reservation: Reservation
    added: list[str]
    removed: list[str]
    layout_kept: bool = strawberry.field(description="Same NVLink domain where there was room, same leaves and rails")
    reason: str
    rank_order: list[str] = strawberry.field(description="GPU uuids by rank after the change")


@strawberry.type(description="A preemption waiting for its grace period; the victims were told.")
class PendingPreemption:
    reservation: Reservation = strawberry.field(description="The preempting reservation, state pending")
    victims: list[PreemptionVictim]
    grace_ends_at: float
    lost_gpu_hours: float = strawberry.field(
        description="Work the victims lose since their checkpoints, restarts included"
    )
    reason: str


@strawberry.type
class RankGpu:
    rank: int
    gpu: str


@strawberry.type(description="Replacement GPUs for failed or stale ones; applied if the reservation allows it.")
class Replacement:
    reservation: str
    failed: list[str]
    ranks: list[RankGpu] = strawberry.field(description="Rank -> its new GPU")
    layout_kept: bool
    applied: bool
    reason: str


@strawberry.type(description="Whether the reservation's next planned phase fits in place, and where it would grow.")
class PhaseFit:
    phase: str | None
    next_phase: str | None
    request: str | None
    fits: bool
    gpus_now: int
    gpus_next: int
    add: list[str]
    layout_kept: bool
    reason: str


@strawberry.type(description="The phase plan was stored.")
class PhasesSet:
    id: str


ResizeResult = Annotated[
    Resized | Conflict | Infeasible | ValidationError | NotFound | LeaseExpired, strawberry.union("ResizeResult")
]
PreemptResult = Annotated[
    Reservation | PendingPreemption | Infeasible | ValidationError, strawberry.union("PreemptResult")
]
ReplaceResult = Annotated[Replacement | NotFound, strawberry.union("ReplaceResult")]
PhasesResult = Annotated[PhasesSet | ValidationError, strawberry.union("PhasesResult")]
PhaseFitResult = Annotated[PhaseFit | NotFound | LeaseExpired, strawberry.union("PhaseFitResult")]


@strawberry.input(description="Reserve, preempting lower-priority work after a grace period if nothing else fits.")
class PreemptInput:
    holder: str
    request: PlacementRequestInput
    priority: int
    grace_seconds: int = strawberry.field(default=300, description="How long the victims have to checkpoint")
    ttl_seconds: int | None = None
    preemptible: bool = False
    labels: list[str] = strawberry.field(default_factory=list)


def _infeasible(out: svc.Infeasible) -> Infeasible:
    return Infeasible(
        message="; ".join(r.message for r in out.reasons) or "nothing fits the request now",
        reasons=list(out.reasons),
    )


def _victim(v: svc.PreemptionVictim) -> PreemptionVictim:
    return PreemptionVictim(
        reservation=v.reservation, holder=v.holder, priority=v.priority, gpus=v.gpus,
        lost_gpu_hours=v.lost_gpu_seconds / 3600,
    )  # fmt: skip


@strawberry.type(name="Mutation")
class ElasticMutations:
    @strawberry.mutation(
        description="Grow (keeping the layout) or shrink a live reservation atomically: to `gpus` GPUs, "
        "or without the GPUs or ranks named."
    )
    async def resize(
        self,
        info: Info,
        id: str,
        gpus: int | None = None,
        remove: list[str] | None = None,
        remove_ranks: list[int] | None = None,
        keep_layout: bool = True,
    ) -> ResizeResult:
        await _own(info, id)
        info.context.limit_mutations()
        elastic = elastic_for(info.context.reservations).resize
        out = await elastic.resize(
            id, gpus=gpus, remove=remove or [], remove_ranks=remove_ranks or [], keep_layout=keep_layout
        )
        if isinstance(out, rz.Resized):
            return Resized(
                reservation=to_graphql(out.reservation), added=out.added, removed=out.removed,
                layout_kept=out.layout_kept, reason=out.reason,
                rank_order=[g.uuid for g in (await _ranked(info, id))],
            )  # fmt: skip
        return await _common(info, out)

    @strawberry.mutation(description="Reserve with a priority; victims get `graceSeconds` to checkpoint first.")
    async def preempt(self, info: Info, input: PreemptInput) -> PreemptResult:
        principal = info.context.require(Role.SCHEDULER, Role.OPERATOR)
        info.context.limit_mutations()
        out = await elastic_for(info.context.reservations).preemption.preempt(
            holder=input.holder, request=input.request.to_request(), priority=input.priority,
            grace_s=input.grace_seconds, ttl_s=input.ttl_seconds, labels=input.labels,
            preemptible=input.preemptible, owner=principal.name,
        )  # fmt: skip
        if isinstance(out, svc.Reservation):
            return to_graphql(out)
        if isinstance(out, pre.Pending):
            return PendingPreemption(
                reservation=to_graphql(out.reservation), victims=[_victim(v) for v in out.plan.victims],
                grace_ends_at=out.grace_ends_at, lost_gpu_hours=out.plan.lost_gpu_seconds / 3600,
                reason=out.plan.reason,
            )  # fmt: skip
        if isinstance(out, svc.Infeasible):
            return _infeasible(out)
        return ValidationError(field=out.field, message=out.message)

    @strawberry.mutation(
        description="Replace this reservation's failed or stale GPUs with GPUs that keep its layout "
        "(apply: false only proposes)."
    )
    async def replace_failed(self, info: Info, id: str, apply: bool = True) -> ReplaceResult:
        await _own(info, id)
        info.context.limit_mutations()
        elastic = elastic_for(info.context.reservations)
        found = [r for r in await elastic.replacement.check(apply=False, only=id) if r.reservation == id]
        if not found:
            return NotFound(id=id, message="no live reservation with this id holds a failed or stale GPU")
        done = await elastic.replacement.replace(id, found[0].failed, apply=apply) if apply else found[0]
        if done is None:
            return NotFound(id=id, message="the reservation ended or changed; nothing replaced")
        return Replacement(
            reservation=done.reservation, failed=done.failed,
            ranks=[RankGpu(rank=k, gpu=v) for k, v in sorted(done.ranks.items())],
            layout_kept=done.layout_kept, applied=done.applied, reason=done.reason,
        )  # fmt: skip

    @strawberry.mutation(description='Set the current phase and the plan of phases ("label=request" strings).')
    async def set_phases(self, info: Info, id: str, phase: str, phases: list[str]) -> PhasesResult:
        await _own(info, id)
        info.context.limit_mutations()
        out = await ph.set_phases(elastic_for(info.context.reservations).resize, id, phase, phases)
        if out is None:
            return PhasesSet(id=id)
        return ValidationError(field=out.field, message=out.message)


async def next_phase(info: Info, id: str) -> PhaseFitResult:
    """Whether the reservation's next phase will fit in place, and on which GPUs."""
    info.context.require(*READERS)
    out = await ph.next_phase(elastic_for(info.context.reservations).resize, id)
    if isinstance(out, ph.PhaseFit):
        return PhaseFit(
            phase=out.phase, next_phase=out.next_phase, request=out.request, fits=out.fits, gpus_now=out.gpus_now,
            gpus_next=out.gpus_next, add=out.add, layout_kept=out.layout_kept, reason=out.reason,
        )  # fmt: skip
    if isinstance(out, svc.NotFound):
        return NotFound(id=out.id, message=out.message)
    return LeaseExpired(id=out.id, expired_at=out.expired_at, message=out.message)


@strawberry.type(description="What a lease holder should act on besides its lease.")
class ElasticState:
    id: str
    state: str
    rank_order: list[str] = strawberry.field(description="GPU uuids by rank (changes with resize and replacement)")
    phase: str | None
    phases: list[str]
    last_checkpoint_at: float | None
    checkpoint_every_seconds: float | None
    preempt_by: str | None = strawberry.field(description="The reservation that will take its GPUs, if any")
    preempt_at: float | None = strawberry.field(description="When: checkpoint and release before then")


async def elastic_state(info: Info, id: str) -> ElasticState | None:
    """Null if unknown."""
    info.context.require(*READERS)
    out = await elastic_for(info.context.reservations).resize.notices(id)
    if isinstance(out, svc.NotFound):
        return None
    return ElasticState(
        id=out["id"], state=out["state"], rank_order=out["rank_order"], phase=out["phase"], phases=out["phases"],
        last_checkpoint_at=out["last_checkpoint_at"], checkpoint_every_seconds=out["checkpoint_every_s"],
        preempt_by=out["preempt_by"], preempt_at=out["preempt_at"],
    )  # fmt: skip


@strawberry.type(name="Query")
class ElasticQuery:
    next_phase: PhaseFitResult = strawberry.field(
        resolver=next_phase, description="Whether a reservation's next planned phase fits in place, and where."
    )
    elastic_state: ElasticState | None = strawberry.field(
        resolver=elastic_state, description="Preemption notice, rank order, phase and checkpoint of a reservation."
    )


async def _ranked(info: Info, reservation_id: str) -> list[Slot]:
    live = await elastic_for(info.context.reservations).resize.live(reservation_id)
    return live.slots if isinstance(live, rz.Live) else []


async def _common(
    info: Info, out: svc.Conflict | svc.Infeasible | svc.ValidationError | svc.NotFound | svc.LeaseExpired
) -> Conflict | Infeasible | ValidationError | NotFound | LeaseExpired:
    if isinstance(out, svc.Conflict):
        return await _conflict(info, out)
    if isinstance(out, svc.Infeasible):
        return _infeasible(out)
    if isinstance(out, svc.ValidationError):
        return ValidationError(field=out.field, message=out.message)
    if isinstance(out, svc.NotFound):
        return NotFound(id=out.id, message=out.message)
    return LeaseExpired(id=out.id, expired_at=out.expired_at, message=out.message)
