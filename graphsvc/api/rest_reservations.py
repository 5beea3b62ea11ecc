"""REST fast path for schedulers: place, reserve, read, renew and release without GraphQL.

The same service calls, roles, ownership and mutation rate limit as the GraphQL mutations,
and the same typed outcomes (`kind` is the GraphQL type name: Reservation, Conflict,
Infeasible, ValidationError, IdempotencyKeyMismatch, NotFound, LeaseExpired), always with status 200: a
conflict is an answer, not a failure. It exists because GraphQL parsing, validation and
result building cost a third of a reserve cycle's CPU; a scheduler calling per job can skip
it. The request is the compact text form (docs/placement.md); a MIG request (`2x 3g.40gb`) is
answered in slices (`migCandidates`, a reservation's `migSlices`), never in whole GPUs.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Request
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from graphsvc.api.errors import ERROR_RESPONSES
from graphsvc.api.graphql.cost import field_cost
from graphsvc.api.graphql.inputs import unprintable_value
from graphsvc.api.one_pass_route import one_pass_route
from graphsvc.placement.mig import SliceCandidate
from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.request import RequestError, parse_request
from graphsvc.reservations import service as svc
from graphsvc.security.auth import Principal, Role, authenticate, caller, require

# A scheduler's call per job: the short way for a valid request (one_pass_route.py).
router = APIRouter(responses=ERROR_RESPONSES, route_class=one_pass_route({caller: authenticate}), tags=["reservations"])


Caller = Annotated[Principal, Depends(caller)]
IdPath = Annotated[str, Path(min_length=1, max_length=256)]


# A field the API does not know is refused (422, naming it), never dropped: `idempotency_key` for
# `idempotencyKey` made a retry a second reservation. Numbers and flags are read as GraphQL reads
# its Int and Boolean: `"ttlSeconds": "30"` and `"preemptible": "yes"` were taken as 30 and true,
# which GraphQL refuses; a whole float (600.0) is an int to both. (Fields, not a strict model,
# which would read JSON and Python apart: see one_pass_route.)
STRICT_BODY = ConfigDict(extra="forbid")


def _whole_number(value: object) -> object:
    """GraphQL's Int: an int, or a float with nothing after the point; never a string or a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a whole number")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole_number)]


class PlaceBody(BaseModel):
    model_config = STRICT_BODY

    request: str = Field(max_length=4096, description='compact text form, e.g. "8xH100 nvlink=full-mesh"')


class ReserveBody(BaseModel):
    model_config = STRICT_BODY

    holder: str = Field(max_length=256)
    request: str | None = Field(default=None, max_length=4096, description="compact text form")
    gpus: list[str] | None = Field(default=None, max_length=svc.MAX_GPUS, description="explicit GPU uuids")
    ttlSeconds: WholeNumber | None = None
    idempotencyKey: str | None = Field(default=None, max_length=128)
    priority: WholeNumber = 0
    preemptible: StrictBool = False
    labels: list[str] = Field(default_factory=list, max_length=svc.MAX_LABELS)
    allowPreemption: StrictBool = False
    explain: StrictBool = Field(default=False, description="on Infeasible, the full diagnosis (costs several searches)")


class RenewBody(BaseModel):
    model_config = STRICT_BODY

    ttlSeconds: WholeNumber | None = Field(
        default=None, description="the new lease from now; if absent, the lease last granted"
    )


class GpuOut(BaseModel):
    uuid: str
    host: str
    index: int


class CandidateOut(BaseModel):
    hosts: list[str]
    gpus: list[str] = Field(description="uuids in collective rank order")
    score: float
    reason: str


class HolderOut(BaseModel):
    """Who holds a GPU a reserve wanted (GraphQL's ReservationHolder), so a scheduler can tell
    its own stale reservation from another job's without a second call."""

    gpuUuid: str
    reservation: str
    holder: str


class ReasonOut(BaseModel):
    constraint: str
    message: str
    nearestFeasible: str | None = None


class SliceOut(BaseModel):
    """A MIG slice (what CUDA_VISIBLE_DEVICES takes): the unit a MIG-enabled GPU is handed out in."""

    uuid: str
    profile: str
    gpu: str = Field(description="the uuid of the MIG-enabled GPU it is part of")
    host: str
    held: bool | None = Field(default=None, description="in a reservation: whether it still holds it")


class MigCandidateOut(BaseModel):
    slices: list[SliceOut]
    scope: str = Field(description="gpu (all on one GPU), host (one host) or hosts (several)")
    hosts: list[str]
    reason: str


class PlaceOut(BaseModel):
    candidates: list[CandidateOut]
    infeasible: list[ReasonOut]
    migCandidates: list[MigCandidateOut] = Field(default_factory=list, description="for a MIG request (2x 3g.40gb)")


class Outcome(BaseModel):
    """One of the typed outcomes; the fields its kind does not use are absent (null)."""

    kind: str
    id: str | None = None
    holder: str | None = None
    state: str | None = None
    createdAt: float | None = None
    expiresAt: float | None = None
    endedAt: float | None = Field(default=None, description="a Reservation that ended: when; a LeaseExpired: when")
    priority: int | None = None
    labels: list[str] | None = None
    preemptBy: str | None = Field(default=None, description="a live victim: the pending reservation taking its GPUs")
    preemptAt: float | None = Field(default=None, description="a live victim: when its GPUs move")
    graceEndsAt: float | None = Field(default=None, description="a pending preemption: when the GPUs move")
    gpus: list[GpuOut] | None = None
    migSlices: list[SliceOut] | None = None
    lostSlices: list[str] | None = None
    conflictGpus: list[str] | None = None
    holders: list[HolderOut] | None = None
    reasons: list[ReasonOut] | None = None
    field: str | None = None
    message: str | None = None


# The GraphQL cost of the same call (graphql/cost.py): refused above the same limit
# (`_within_limit`) and charged to the same per-token budget (`_spend`). The fast path charged
# nothing: a token could ask for 4,096-GPU placements without end, up to seconds of the service's
# CPU each when infeasible (a probe, stop 58).


_READ_COST = field_cost("reservation", {})  # a reservation with every GPU it holds, the largest job's


def _within_limit(request: Request, cost: int) -> None:
    settings = getattr(request.app.state, "settings", None)
    if settings is not None and cost > settings.graphql_max_cost:
        # More than any one call may cost: refused for good, as GraphQL's QUERY_TOO_EXPENSIVE (a
        # budget smaller than the cost would never let it run: a 429 would invite retries forever).
        raise HTTPException(
            status_code=400,
            detail=f"query too expensive: it costs {cost}, the limit is {settings.graphql_max_cost}; "
            "ask for fewer GPUs",
        )


def _spend(request: Request, caller: Principal, cost: int) -> None:
    budget = getattr(request.app.state, "query_budget", None)
    if budget is not None and not budget.allow(caller.name, cost=cost):
        retry = budget.wait_s(caller.name, cost)
        raise HTTPException(
            status_code=429,
            detail=f"query budget exceeded: this token has spent its budget; a call costing {cost} can run again "
            f"in {retry:.1f} s",
            headers={"Retry-After": str(max(1, math.ceil(retry)))},
        )


def _charge(request: Request, caller: Principal, cost: int) -> None:
    """Refuse a call over the limit for good, else spend its cost (a reserve puts its mutation
    limit between the two: a call refused for good spends no mutation token)."""
    _within_limit(request, cost)
    _spend(request, caller, cost)


def _limit(request: Request, caller: Principal) -> None:
    limiter = getattr(request.app.state, "limiter", None)
    if limiter is not None and not limiter.allow(caller.name):
        raise HTTPException(status_code=429, detail="rate limited: too many mutations from this token; slow down")


async def _own(service: svc.ReservationService, reservation_id: str, caller: Principal) -> None:
    """Schedulers renew and release only their own reservations; operators any."""
    if not await service.may_change(reservation_id, caller.name, operator=caller.role is Role.OPERATOR):
        raise HTTPException(status_code=403, detail="forbidden: only its owner or an operator may change it")


def _reservation(r: svc.Reservation) -> Outcome:
    gpus = [GpuOut(uuid=g.uuid, host=g.host, index=g.index) for g in r.gpus]
    slices = [SliceOut(uuid=x.uuid, profile=x.profile, gpu=x.gpu, host=x.host, held=x.held) for x in r.slices]
    return Outcome(
        kind="Reservation",
        id=r.id,
        holder=r.holder,
        state=r.state,
        createdAt=r.created_at,
        expiresAt=r.expires_at,
        endedAt=r.ended_at,
        priority=r.priority,
        labels=r.labels,
        preemptBy=r.preempt_by,
        preemptAt=r.preempt_at,
        graceEndsAt=r.grace_ends_at,
        gpus=gpus,
        migSlices=slices,
        lostSlices=r.lost_slices,
    )


def _mig_candidates(found: list[SliceCandidate]) -> list[MigCandidateOut]:
    return [
        MigCandidateOut(
            slices=[SliceOut(uuid=x.uuid, profile=x.profile, gpu=x.gpu, host=x.host) for x in c.slices],
            scope=c.scope.value,
            hosts=c.hosts,
            reason=c.reason,
        )
        for c in found
    ]


def _reasons(reasons: list[InfeasibleReason]) -> list[ReasonOut]:
    return [ReasonOut(constraint=x.constraint, message=x.message, nearestFeasible=x.nearest_feasible) for x in reasons]


def _reserve_cost(body: ReserveBody) -> int:
    """What GraphQL's `reserve` of the same body costs: by the GPUs named, or asked in the text."""
    if body.gpus is not None:
        return field_cost("reserve", {"input": {"gpus": body.gpus}})
    return field_cost("placementText", {"text": body.request})


@router.post("/v1/place")
async def place(body: PlaceBody, request: Request, caller: Caller) -> PlaceOut:
    """Ranked candidates for a request; nothing is held."""
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    _charge(request, caller, field_cost("placementText", {"text": body.request}))
    try:
        req = parse_request(body.request).validated()
    except RequestError as err:
        return PlaceOut(candidates=[], infeasible=[ReasonOut(constraint=err.field, message=err.message)])
    result = await request.app.state.reservations.engine.place(req)
    candidates = [
        CandidateOut(hosts=[h.name for h in c.hosts], gpus=c.rank_order, score=c.score, reason=c.reason)
        for c in result.candidates
    ]
    return PlaceOut(
        candidates=candidates,
        infeasible=_reasons(result.infeasible),
        migCandidates=_mig_candidates(result.mig_candidates),
    )


@router.post("/v1/reservations")
async def reserve(body: ReserveBody, request: Request, caller: Caller) -> Outcome:
    """Hold GPUs for a job, all or none (the GraphQL `reserve` mutation)."""
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    cost = _reserve_cost(body)
    _within_limit(request, cost)  # a call refused for good spends no mutation token
    _limit(request, caller)
    _spend(request, caller, cost)
    # The text GraphQL's reserve checks (inputs.unprintable_argument), answered alike: a NUL in a
    # GPU uuid went to the store (an untyped 422 on FalkorDB, "unknown GPU" on Neo4j).
    text = {"holder": body.holder, "gpus": body.gpus, "idempotencyKey": body.idempotencyKey, "labels": body.labels}
    unprintable = unprintable_value(text)
    if unprintable is not None:
        return Outcome(kind="ValidationError", field=unprintable[0], message=unprintable[1])
    try:
        placement = parse_request(body.request) if body.request is not None else None
    except RequestError as err:
        return Outcome(kind="ValidationError", field=err.field, message=err.message)
    service: svc.ReservationService = request.app.state.reservations
    out = await service.reserve(
        owner=caller.name,
        holder=body.holder,
        request=placement,
        gpus=body.gpus,
        ttl_s=body.ttlSeconds,
        idempotency_key=body.idempotencyKey,
        priority=body.priority,
        preemptible=body.preemptible,
        labels=body.labels,
        allow_preemption=body.allowPreemption,
        explain=body.explain,
    )
    if isinstance(out, svc.Reservation):
        return _reservation(out)
    if isinstance(out, svc.Conflict):
        holders = [HolderOut(gpuUuid=h.gpu_uuid, reservation=h.reservation, holder=h.holder) for h in out.holders]
        return Outcome(kind="Conflict", message=out.message, conflictGpus=out.gpus, holders=holders)
    if isinstance(out, svc.Infeasible):
        return Outcome(kind="Infeasible", reasons=_reasons(out.reasons))
    if isinstance(out, svc.IdempotencyKeyMismatch):
        return Outcome(kind="IdempotencyKeyMismatch", id=out.reservation, message=out.message)
    return Outcome(kind="ValidationError", field=out.field, message=out.message)


@router.post("/v1/reservations/{reservation_id}/release")
async def release(reservation_id: IdPath, request: Request, caller: Caller) -> Outcome:
    """Free the GPUs now; releasing twice is harmless. Schedulers release only their own."""
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    service: svc.ReservationService = request.app.state.reservations
    await _own(service, reservation_id, caller)
    _limit(request, caller)
    out = await service.release(reservation_id)
    if isinstance(out, svc.NotFound):
        return Outcome(kind="NotFound", id=out.id, message=out.message)
    return _reservation(out)


@router.get("/v1/reservations/{reservation_id}")
async def read(reservation_id: IdPath, request: Request, caller: Caller) -> Outcome:
    """One reservation as its holder sees it (GraphQL's `reservation`): `expired` once its lease ran out.
    Charged as that field is (it read for free until stop 70)."""
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    _charge(request, caller, _READ_COST)
    found = await request.app.state.reservations.read(reservation_id)
    if found is None:
        return Outcome(kind="NotFound", id=reservation_id, message=f"no reservation {reservation_id!r}")
    return _reservation(found)


@router.post("/v1/reservations/{reservation_id}/renew")
async def renew(reservation_id: IdPath, request: Request, caller: Caller, body: RenewBody | None = None) -> Outcome:
    """Extend a live lease (the GraphQL `renew` mutation); no body or `{}`: for the lease last granted.
    Schedulers renew only their own."""
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    service: svc.ReservationService = request.app.state.reservations
    await _own(service, reservation_id, caller)
    _limit(request, caller)
    out = await service.renew(reservation_id, body.ttlSeconds if body is not None else None)
    if isinstance(out, svc.Reservation):
        return _reservation(out)
    if isinstance(out, svc.LeaseExpired):
        return Outcome(kind="LeaseExpired", id=out.id, endedAt=out.expired_at, message=out.message)
    if isinstance(out, svc.NotFound):
        return Outcome(kind="NotFound", id=out.id, message=out.message)
    return Outcome(kind="ValidationError", field=out.field, message=out.message)
