"""GraphQL for reservations: typed results for every expected outcome, a subscription for events."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Annotated

import strawberry

from graphsvc.api.graphql import mig
from graphsvc.api.graphql.context import READERS, Forbidden, Info
from graphsvc.api.graphql.errors import Error, NotFound, ValidationError
from graphsvc.api.graphql.inputs import PlacementRequestInput
from graphsvc.api.graphql.selection import selects
from graphsvc.api.graphql.types import GPU, HostRef, InfeasibleReason
from graphsvc.placement.request import RequestError
from graphsvc.reservations import service as svc
from graphsvc.reservations.elastic import elastic_for
from graphsvc.security.auth import Role

# GPU fields the reservation's own read does not carry: asking for any of them costs one read of the GPUs.
_LIVE_FIELDS = frozenset(
    {"memoryMiB", "health", "temperatureC", "utilizationPct", "numaNode", "pciBusId", "nvlinkDomain", "scaleUpDomain"}
)


@strawberry.type
class Reservation:
    id: str
    holder: str
    state: str = strawberry.field(description="active, released, expired, preempted; pending or failed (a preemption)")
    created_at: float
    expires_at: float
    ended_at: float | None
    priority: int
    preemptible: bool
    labels: list[str]
    idempotency_key: str
    request: str | None = strawberry.field(description="The placement request in text form, if any")
    held_gpus: strawberry.Private[list[GPU]]
    hosts: list[HostRef]
    mig_slices: list[mig.MigSlice] = strawberry.field(
        default_factory=list, description="The MIG slices it holds (a reservation of slices holds no whole GPU)"
    )
    lost_slices: list[str] = strawberry.field(
        default_factory=list, description="Uuids of held MIG slices their host stopped reporting"
    )
    preempt_by: str | None = strawberry.field(
        default=None, description="A live victim: the pending reservation that will take its GPUs"
    )
    preempt_at: float | None = strawberry.field(
        default=None, description="A live victim: when its GPUs move (checkpoint and release before then)"
    )
    grace_ends_at: float | None = strawberry.field(
        default=None, description="A pending preemption: when the victims' grace period ends and the GPUs move"
    )

    @strawberry.field(
        description="The GPUs it holds or held: each one's state is reserved while it holds them, null once it "
        "has ended (the GPU's state now is another reservation's business: ask the host or gpus). Their live "
        "readings (health, temperatureC, memoryMiB...) are read when asked for, one query for every reservation "
        "in the answer"
    )
    async def gpus(self, info: Info) -> list[GPU]:
        if not self.held_gpus or not any(selects(f.selections, _LIVE_FIELDS) for f in info.selected_fields):
            return self.held_gpus  # what the reservation's own read returned: no second query
        found = await info.context.loaders.gpu.load_many([g.uuid for g in self.held_gpus])
        pairs = zip(self.held_gpus, found, strict=True)
        return [g if n is None else replace(GPU.of(n.gpu, g.host), state=g.state) for g, n in pairs]


@strawberry.type
class ReservationHolder:
    gpu_uuid: str
    reservation: str
    holder: str


@strawberry.type(description="The GPUs are held by other live reservations.")
class Conflict(Error):
    gpus: list[GPU]
    holders: list[ReservationHolder]


@strawberry.type(description="Nothing in the cluster can satisfy the request now.")
class Infeasible(Error):
    reasons: list[InfeasibleReason]


@strawberry.type(description="The lease ran out (or the reservation ended) before the renewal.")
class LeaseExpired(Error):
    id: str
    expired_at: float


@strawberry.type(description="The idempotency key was already used with a different request; nothing changed.")
class IdempotencyKeyMismatch(Error):
    key: str
    reservation: str = strawberry.field(description="The reservation the key was first used for")


ReserveResult = Annotated[
    Reservation | Conflict | Infeasible | ValidationError | IdempotencyKeyMismatch, strawberry.union("ReserveResult")
]
RenewResult = Annotated[Reservation | LeaseExpired | NotFound | ValidationError, strawberry.union("RenewResult")]
ReleaseResult = Annotated[Reservation | NotFound, strawberry.union("ReleaseResult")]


@strawberry.input(description="Either a placement request or an explicit list of GPU uuids, plus the lease.")
class ReserveInput:
    holder: str
    request: PlacementRequestInput | None = None
    gpus: list[str] | None = None
    ttl_seconds: int | None = None
    idempotency_key: str | None = None
    priority: int = 0
    preemptible: bool = False
    labels: list[str] = strawberry.field(default_factory=list, description='"key=value" strings')
    allow_preemption: bool = strawberry.field(
        default=False, description="May end lower-priority preemptible reservations if nothing else fits"
    )
    explain: bool = strawberry.field(
        default=False,
        description="On Infeasible, the full diagnosis (each blocking constraint, the nearest request that "
        "fits); without it one cheap reason. The diagnosis costs several searches.",
    )


@strawberry.input
class ReservationFilter:
    holder: str | None = None
    state: str | None = None


@strawberry.type
class ReservationEvent:
    kind: str = strawberry.field(
        description="reservation.created|renewed|released|expired|preempted, host.stale|recovered|removed"
    )
    subject: str = strawberry.field(description="The reservation id or host name")
    holder: str
    at: float
    detail: str = strawberry.field(
        default="", description="What changed (elastic events; JSON for preempting and replaced: deadline, rank map)"
    )


def to_graphql(r: svc.Reservation) -> Reservation:
    hosts: dict[str, HostRef] = {}
    gpus = []
    for g in r.gpus:
        ref = hosts.setdefault(g.host, HostRef(name=g.host, rack=g.rack, scalable_unit=g.scalable_unit))
        gpus.append(GPU(uuid=g.uuid, index=g.index, model=g.model, host=ref, state="reserved" if g.held else None))
    return Reservation(
        id=r.id,
        holder=r.holder,
        state=r.state,
        created_at=r.created_at,
        expires_at=r.expires_at,
        ended_at=r.ended_at,
        priority=r.priority,
        preemptible=r.preemptible,
        labels=r.labels,
        idempotency_key=r.idempotency_key,
        request=r.request,
        held_gpus=gpus,
        hosts=list(hosts.values()) or [HostRef(name=h) for h in sorted({s.host for s in r.slices})],
        mig_slices=mig.reserved(r.slices),
        lost_slices=r.lost_slices,
        preempt_by=r.preempt_by,
        preempt_at=r.preempt_at,
        grace_ends_at=r.grace_ends_at,
    )


async def _conflict(info: Info, c: svc.Conflict) -> Conflict:
    found = await info.context.services.browse.gpus_by_uuid(c.gpus)
    gpus = [GPU.of(n.gpu, HostRef(name=n.host)) for n in found]
    holders = [ReservationHolder(gpu_uuid=h.gpu_uuid, reservation=h.reservation, holder=h.holder) for h in c.holders]
    return Conflict(message=c.message, gpus=gpus, holders=holders)


async def _own(info: Info, reservation_id: str) -> None:
    """Schedulers renew and release only their own reservations; operators any."""
    principal = info.context.require(Role.SCHEDULER, Role.OPERATOR)
    if not await info.context.reservations.may_change(
        reservation_id, principal.name, operator=principal.role is Role.OPERATOR
    ):
        raise Forbidden("forbidden: only its owner or an operator may change this reservation")


@strawberry.type(name="Mutation")
class ReservationMutations:
    @strawberry.mutation(description="Hold GPUs for a job, all or none, until the lease expires.")
    async def reserve(self, info: Info, input: ReserveInput) -> ReserveResult:
        principal = info.context.require(Role.SCHEDULER, Role.OPERATOR)
        info.context.limit_mutations()
        out = await info.context.reservations.reserve(
            owner=principal.name,
            holder=input.holder,
            request=input.request.to_request() if input.request is not None else None,
            gpus=input.gpus,
            ttl_s=input.ttl_seconds,
            idempotency_key=input.idempotency_key,
            priority=input.priority,
            preemptible=input.preemptible,
            labels=input.labels,
            allow_preemption=input.allow_preemption,
            explain=input.explain,
        )
        if isinstance(out, svc.Reservation):
            return to_graphql(out)
        if isinstance(out, svc.Conflict):
            return await _conflict(info, out)
        if isinstance(out, svc.IdempotencyKeyMismatch):
            return IdempotencyKeyMismatch(key=out.key, reservation=out.reservation, message=out.message)
        if isinstance(out, svc.Infeasible):
            return Infeasible(
                message="; ".join(r.message for r in out.reasons) or "nothing fits the request now",
                reasons=list(out.reasons),
            )
        return ValidationError(field=out.field, message=out.message)

    @strawberry.mutation(
        description="Extend a live lease from now by ttlSeconds (without it: by the lease last granted); "
        "optionally report progress (what preempting it would cost)."
    )
    async def renew(
        self,
        info: Info,
        id: str,
        ttl_seconds: int | None = None,
        last_checkpoint_at: float | None = None,
        checkpoint_every_seconds: float | None = None,
    ) -> RenewResult:
        await _own(info, id)
        info.context.limit_mutations()
        if last_checkpoint_at is None and checkpoint_every_seconds is None:
            out = await info.context.reservations.renew(id, ttl_seconds)
        else:
            out = await elastic_for(info.context.reservations).preemption.renew(
                id, ttl_seconds, last_checkpoint_at=last_checkpoint_at, checkpoint_every_s=checkpoint_every_seconds
            )
        if isinstance(out, svc.Reservation):
            return to_graphql(out)
        if isinstance(out, svc.LeaseExpired):
            return LeaseExpired(id=out.id, expired_at=out.expired_at, message=out.message)
        if isinstance(out, svc.NotFound):
            return NotFound(id=out.id, message=out.message)
        return ValidationError(field=out.field, message=out.message)

    @strawberry.mutation(description="Free the GPUs now; releasing twice is harmless.")
    async def release(self, info: Info, id: str) -> ReleaseResult:
        await _own(info, id)
        info.context.limit_mutations()
        out = await info.context.reservations.release(id)
        if isinstance(out, svc.NotFound):
            return NotFound(id=out.id, message=out.message)
        return to_graphql(out)


@strawberry.type
class PreemptionVictim:
    reservation: str
    holder: str
    priority: int
    gpus: list[str]
    lost_gpu_hours: float = strawberry.field(
        default=0.0, description="GPU-hours it loses since its last checkpoint, its restart included"
    )


@strawberry.type(description="What a preempting reservation would take; nothing is changed by asking.")
class PreemptionPlan:
    feasible: bool
    gpus: list[str]
    hosts: list[str]
    victims: list[PreemptionVictim]
    largest_free_block_before: int
    largest_free_block_after: int
    reason: str
    lost_gpu_hours: float = strawberry.field(default=0.0, description="Summed over the victims")


PreemptionPlanResult = Annotated[PreemptionPlan | ValidationError, strawberry.union("PreemptionPlanResult")]


async def preemption_plan(info: Info, request: PlacementRequestInput, priority: int) -> PreemptionPlanResult:
    try:
        svc.check_priority(priority)
        req = request.to_request().validated()
    except RequestError as err:  # invalid input: the same answer reserve gives
        return ValidationError(field=err.field, message=err.message)
    plan = await info.context.reservations.preemption_plan(req, priority)
    return PreemptionPlan(
        feasible=plan.feasible,
        gpus=plan.gpus,
        hosts=plan.hosts,
        victims=[PreemptionVictim(reservation=v.reservation, holder=v.holder, priority=v.priority, gpus=v.gpus,
                                  lost_gpu_hours=v.lost_gpu_seconds / 3600)
                 for v in plan.victims],
        lost_gpu_hours=plan.lost_gpu_seconds / 3600,
        largest_free_block_before=plan.largest_free_block_before,
        largest_free_block_after=plan.largest_free_block_after,
        reason=plan.reason,
    )  # fmt: skip


async def reservation(info: Info, id: str) -> Reservation | None:
    found = await info.context.reservations.read(id)
    return to_graphql(found) if found is not None else None


async def reservations(
    info: Info, filter: ReservationFilter | None, first: int, after: str | None
) -> list[Reservation]:
    flt = filter or ReservationFilter()
    found = await info.context.reservations.page(flt.holder, flt.state, first, after)
    return [to_graphql(r) for r in found]


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Reservation and host events as they happen.")
    async def events(self, info: Info, holder: str | None = None) -> AsyncGenerator[ReservationEvent, None]:
        info.context.require(*READERS)
        async for event in info.context.reservations.events.subscribe():
            if holder is None or event.holder == holder or event.kind.startswith(("host.", "subscriber.")):
                yield ReservationEvent(
                    kind=event.kind, subject=event.subject, holder=event.holder, at=event.at, detail=event.detail
                )
