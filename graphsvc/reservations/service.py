"""Gang reservations with leases: all GPUs of a job or none, never one GPU twice.

Every reservation is one conditional write (``reservations/reserve_gpus.cypher``): it takes
the GPUs only if all are free (or their hold has lapsed), moves the free counters in the
same statement, and writes nothing otherwise. A request-based reserve asks placement for
ranked candidates and tries them in order; a candidate that a concurrent reservation took
simply fails its write, and the next one is tried (a bounded number of times) before the
answer is a typed Conflict. See docs/reservations.md for why this is safe on both stores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial, wraps
from typing import Any, Concatenate, ParamSpec, cast

from topo_facts.gpu_models import normalised
from topo_facts.models import UNPRINTABLE

from graphsvc.paging import page_size
from graphsvc.placement.engine import PlacementEngine, unknown_model
from graphsvc.placement.mig import SliceCandidate
from graphsvc.placement.mig_service import place_slices
from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.request import PlacementRequest, RequestError, format_request
from graphsvc.reservations import checkpoints
from graphsvc.reservations import mig as mig_slices
from graphsvc.reservations.events import Event, EventBus, tell_spared
from graphsvc.reservations.fastpath import (
    SCAN_EVERY_HOST_UP_TO,
    BatchItem,
    BatchKey,
    BatchRequest,
    accepted_models,
    batch_item,
    batch_params,
    candidate_read,
    fast_path_mode,
    in_host_params,
)
from graphsvc.reservations.owners import Owners
from graphsvc.reservations.rows import (
    HeldGpuRow,
    HoldingRow,
    LeaseTerms,
    ReservationProps,
    ReservationRow,
    WrittenRow,
    as_holding_rows,
    as_reservation_rows,
)
from graphsvc.store.backend import Row
from graphsvc.store.errors import StoreConstraintError, StoreError
from graphsvc.store.gateway import Gateway
from graphsvc.store.group_commit import GroupCommit

log = logging.getLogger(__name__)
# Before any (ended_at, id) (epoch seconds; not -inf, which FalkorDB's parameter header cannot carry).
PRUNE_START = (-1.0e300, "")

MAX_GPUS = 4096
MAX_PREEMPTION_HOSTS = 1024  # hosts a preemption plan searches beyond the free ones (victims and neighbours)
MAX_LABELS = 32
_DEFAULT_LIMIT = PlacementRequest(gpus=1).limit  # what a request that names no limit has
PLACED_ROUNDS = 4  # fresh placements a placed reserve looks at before it answers Conflict


@dataclass
class ReservedGpu:
    uuid: str
    index: int
    model: str
    host: str
    rack: str | None
    scalable_unit: str | None
    held: bool


@dataclass
class Reservation:
    id: str
    holder: str
    state: str
    created_at: float
    expires_at: float
    priority: int
    preemptible: bool
    labels: list[str]
    idempotency_key: str
    request: str | None
    gpus: list[ReservedGpu]
    owner: str | None = None
    ended_at: float | None = None
    renewed_at: float | None = None
    # MIG: a reservation of slices holds these instead of GPUs (reservations/mig.py).
    slices: list[mig_slices.ReservedSlice] = field(default_factory=list)
    slice_count: int = 0
    lost_slices: list[str] = field(default_factory=list)  # held slices their host stopped reporting
    # A preemption coming (on a live victim: by whom, its deadline) or waiting (on the pending
    # preemptor: when the GPUs move), so every reader shows the warning without another query.
    preempt_by: str | None = None
    preempt_at: float | None = None
    grace_ends_at: float | None = None


@dataclass(frozen=True)
class KeyUse:
    """A reserve's idempotency key and the request digests a reservation stored under it may
    hold for this request (the one stored now, those stored before: request_fingerprint's
    forms). Carried to the
    write, so a key that raced in is answered as the first look at the key is."""

    key: str
    fingerprints: tuple[str, ...]


@dataclass(frozen=True)
class Released:
    """A reservation a group-committed release ended, and whether a preemption waited on it
    (named it as a victim): only then may the release complete one (Event.awaited)."""

    reservation: Reservation
    awaited: bool


@dataclass(frozen=True)
class ReleaseItem:
    """A release waiting in the group commit, beside the single-host reserves (fastpath.BatchItem)."""

    reservation_id: str


Moment = BatchItem | ReleaseItem
"""What the group commit batches: the writes of one moment (ReservationService._write_moment)."""
MomentAnswer = Reservation | Released | StoreError | None
"""Its answer to each: a reserve's reservation, a release's Released, a statement's error, or None (not done here)."""


@dataclass
class Holder:
    gpu_uuid: str
    reservation: str
    holder: str


def as_seen(r: Reservation, now: float) -> Reservation:
    """A live lease past its end, as its holder sees it: expired, its GPUs no longer held.

    The store records the lapse when the reaper next runs (every few seconds), or a late release
    does; until then the stored state still says active. A reader shown `active` would think it
    may still renew, which answers LeaseExpired: both say expired now, and the store records the
    same: `expired`, ended at the lease's end (the reaper's and the release statements' words).
    """
    if r.state != "active" or r.expires_at >= now:
        return r
    return replace(
        r,
        state="expired",
        ended_at=r.expires_at,
        gpus=[replace(g, held=False) for g in r.gpus],
        slices=[replace(x, held=False) for x in r.slices],
        preempt_by=None,  # a warning for a live victim, as `_reservation` shows it only while active
        preempt_at=None,
    )


def _ended(state: str) -> str:
    """The event a release that ended a reservation in this state publishes: a lease that ran out
    before the release came is ended as expired (the release statements), and says so."""
    return {"preempted": "reservation.preempted", "expired": "reservation.expired"}.get(state, "reservation.released")


@dataclass
class Conflict:
    message: str
    gpus: list[str]
    holders: list[Holder] = field(default_factory=list)


@dataclass
class Infeasible:
    reasons: list[InfeasibleReason]


@dataclass
class ValidationError:
    field: str
    message: str


@dataclass
class NotFound:
    id: str
    message: str


@dataclass
class LeaseExpired:
    id: str
    expired_at: float
    message: str


@dataclass
class PreemptionVictim:
    reservation: str
    holder: str
    priority: int
    gpus: list[str]
    lost_gpu_seconds: float = 0.0  # work since its last checkpoint plus a restart, if preempted now


@dataclass
class PreemptionPlan:
    """What a preempting reservation would take and whom it would displace; nothing is changed."""

    feasible: bool
    gpus: list[str]
    hosts: list[str]
    victims: list[PreemptionVictim]
    largest_free_block_before: int
    largest_free_block_after: int
    reason: str
    lost_gpu_seconds: float = 0.0  # summed over the victims (graphsvc.reservations.checkpoints)


@dataclass
class IdempotencyKeyMismatch:
    """An idempotency key reused with a different request: neither reservation is changed."""

    key: str
    reservation: str
    message: str


ReserveOutcome = Reservation | Conflict | Infeasible | ValidationError | IdempotencyKeyMismatch


def request_fingerprint(
    *,
    holder: str,
    request: PlacementRequest | None,
    gpus: Sequence[str] | None,
    ttl_s: int | None,
    priority: int,
    preemptible: bool,
    labels: Sequence[str],
    allow_preemption: bool,
    form: str = "now",
) -> str:
    """A digest of everything a reserve asks for, stored with an idempotency key.

    A retry (same key, same request) gets the reservation it made; the same key with a
    different request is a client bug that used to get the old reservation silently. Two
    spellings of one request are one request: the model as `model_match` reads it (`2xH100`
    and `2xh100`), the excluded hosts as a set, the lease as it takes effect (no ttl and the
    default's value are one), and `limit` left out (how many candidates placement lists does not
    change what is held; a retry with `limit=5` was a mismatch). `form`: "now", or a digest
    stored before, which a retry across that deploy still matches: "stop46" (limit and ttl as
    given) or "legacy" (the request's text as given, until stop 46).
    """
    text = None
    if request is not None:
        if form == "legacy":
            text = format_request(request)
        else:
            canonical = _canonical(request)
            text = format_request(canonical if form == "stop46" else canonical.with_(limit=_DEFAULT_LIMIT))
    body = {
        "holder": holder,
        "request": text,
        "gpus": sorted(gpus) if gpus is not None else None,
        "ttl_s": ttl_s,
        "priority": priority,
        "preemptible": preemptible,
        "labels": sorted(labels),
        "allow_preemption": allow_preemption,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _canonical(request: PlacementRequest) -> PlacementRequest:
    """The request with the spellings that ask for the same GPUs made one (request_fingerprint)."""
    return request.with_(
        model=normalised(request.model) if request.model else request.model,
        exclude_hosts=tuple(sorted(set(request.exclude_hosts) - {""})),  # "" names no host (the text form drops it)
    )


PRIORITIES = range(-1000, 1001)  # the priorities a reservation may have


def check_priority(priority: int) -> None:
    """One bound for `reserve` and the preemption plan that previews it: a plan for 99999999 was
    made as if it outranked every holder, and the reserve it previewed refused it."""
    if priority not in PRIORITIES:
        raise RequestError("priority", f"must be between {PRIORITIES[0]} and {PRIORITIES[-1]}")


def _unprintable(text: str) -> bool:
    """What may not be in a holder, label, key or id: the rule fact documents' text follows
    (topo_facts.models.UNPRINTABLE)."""
    return UNPRINTABLE.search(text) is not None


def _check_text(name: str, value: str, limit: int) -> None:
    # Blank text ("   ") names nothing: a holder or key nobody can tell from another blank one.
    if not value.strip() or len(value) > limit or _unprintable(value):
        raise RequestError(
            name,
            f"must be 1 to {limit} printable characters, not only spaces (no control characters, line breaks or "
            "bidi controls)",
        )


P = ParamSpec("P")


def _remembers_owner(
    reserve: Callable[Concatenate[ReservationService, P], Coroutine[Any, Any, ReserveOutcome]],
) -> Callable[Concatenate[ReservationService, P], Coroutine[Any, Any, ReserveOutcome]]:
    """Keep the owner of every reservation a reserve answers with (made now or replayed), so
    the owner's release or renew that follows needs no read to check it (`may_change`)."""

    @wraps(reserve)
    async def remembering(service: ReservationService, /, *args: P.args, **kwargs: P.kwargs) -> ReserveOutcome:
        outcome = await reserve(service, *args, **kwargs)
        if isinstance(outcome, Reservation):
            service.owners.remember(outcome.id, outcome.owner)
        return outcome

    return remembering


class ReservationService:
    def __init__(
        self,
        gateway: Gateway,
        *,
        clock: Callable[[], float] = time.time,
        default_ttl_s: int = 600,
        max_ttl_s: int = 7 * 24 * 3600,
        max_attempts: int = 5,
        events: EventBus | None = None,
        group_commit: bool = True,
        scan_every_host_up_to: int = SCAN_EVERY_HOST_UP_TO,
    ) -> None:
        self.gw = gateway
        self.scan_every_host_up_to = scan_every_host_up_to  # fastpath.candidate_read
        self.clock = clock
        self.default_ttl_s = default_ttl_s
        self.max_ttl_s = max_ttl_s
        self.max_attempts = max_attempts
        self.events = events or EventBus()
        self.engine = PlacementEngine(gateway, clock=clock)
        self.engine.reap_lapsed = self._reap_for_placement
        self.owners = Owners()  # for may_change: filled by every reserve's answer and every read
        self._prune_from = PRUNE_START  # where the history pruner's next page starts (prune_history)
        # One-statement tries (the next candidate each) before the general search. Where writes run
        # one at a time, a try that took nothing found no host that fits (no other write can take
        # its pick between its read and its take), so another would read the same: on a cluster in
        # use every infeasible reserve paid two more statements for nothing (docs/benchmarks.md,
        # "Stop 52"). Where writes run concurrently (Neo4j) a race may have taken the pick and the
        # next candidate may still be free.
        self.fast_attempts = 1 if gateway.serial_writes else 3
        # Single-host reserves and releases arriving while a batch is in the store go together
        # (group_commit.py; _write_moment); two batches in flight where the store runs writes one
        # at a time.
        in_flight = 2 if gateway.serial_writes else 1
        self.group: GroupCommit[Moment, MomentAnswer] | None = (
            GroupCommit(self._write_moment, max_in_flight=in_flight) if group_commit else None
        )
        # So are the idempotency-key lookups that precede reserves with a key: one read for all.
        self.key_group: GroupCommit[str, Reservation | None] | None = (
            GroupCommit(self._by_keys, max_batch=128) if group_commit else None
        )

    # ---- reading ----------------------------------------------------------------------

    async def get_many(self, ids: Sequence[str] = (), keys: Sequence[str] = ()) -> list[Reservation]:
        rows = await self.gw.read("reservations/reservation_get", {"ids": list(ids), "keys": list(keys)})
        found = [_reservation(r) for r in as_reservation_rows(rows)]
        for r in found:
            self.owners.remember(r.id, r.owner)
        return await self._with_slices(found)

    async def _with_slices(self, found: list[Reservation]) -> list[Reservation]:
        with_slices = [r.id for r in found if r.slice_count]
        if with_slices:  # only reservations of MIG slices cost this second read
            slices = await mig_slices.slices_of(self.gw, with_slices)
            for r in found:
                r.slices = slices.get(r.id, [])
        return found

    async def get(self, reservation_id: str) -> Reservation | None:
        """As stored (what the service's own decisions need); readers ask `read`."""
        found = await self.get_many(ids=[reservation_id])
        return found[0] if found else None

    async def may_change(self, reservation_id: str, caller: str, *, operator: bool) -> bool:
        """Schedulers renew, release and resize only their own reservations; operators any. An
        unknown id may be asked about: the call itself answers NotFound. The owner of a
        reservation this process made or read comes from `owners`, without a read."""
        if operator:
            return True
        known, owner = self.owners.lookup(reservation_id)
        if not known:
            existing = await self.get(reservation_id)
            if existing is None:
                return True
            owner = existing.owner
        return owner == caller

    async def read(self, reservation_id: str) -> Reservation | None:
        """As a lease holder should see it: `expired` from the moment its lease ran out."""
        found = await self.get(reservation_id)
        return as_seen(found, self.clock()) if found is not None else None

    async def page(self, holder: str | None, state: str | None, first: int, after: str | None) -> list[Reservation]:
        """A page of reservations as `read` shows them: the state filter matches what it shows."""
        now = self.clock()
        rows = await self.gw.read(
            "reservations/reservations_page",
            {
                "holder": holder or "",
                "state": state or "",
                "after": after or "",
                "first": page_size(first, 500),
                "now": now,
            },
        )
        found = {r.id: as_seen(r, now) for r in await self.get_many(ids=[r["id"] for r in rows])}
        return [found[r["id"]] for r in rows if r["id"] in found]

    # ---- reserving --------------------------------------------------------------------

    def _ttl(self, ttl_s: int | None) -> int:
        ttl = self.default_ttl_s if ttl_s is None else ttl_s
        if not 1 <= ttl <= self.max_ttl_s:
            raise RequestError("ttlSeconds", f"must be between 1 and {self.max_ttl_s}")
        return ttl

    @_remembers_owner
    async def reserve(
        self,
        *,
        holder: str,
        request: PlacementRequest | None = None,
        gpus: Sequence[str] | None = None,
        ttl_s: int | None = None,
        idempotency_key: str | None = None,
        priority: int = 0,
        preemptible: bool = False,
        labels: Sequence[str] = (),
        allow_preemption: bool = False,
        owner: str | None = None,
        explain: bool = False,
    ) -> ReserveOutcome:
        """`explain`: an Infeasible answer carries the full diagnosis (each constraint that alone
        blocks it, the largest count that fits); without it, the cheap reasons only (unknown model,
        or one line), since the diagnosis costs several searches and a scheduler retrying later
        rarely reads it. `placement` always explains."""
        try:
            ttl = self._ttl(ttl_s)
            _check_text("holder", holder, 256)
            if idempotency_key is not None:
                _check_text("idempotencyKey", idempotency_key, 128)
            if (request is None) == (gpus is None):
                raise RequestError("input", "give either a placement request or a list of GPU uuids")
            if len(labels) > MAX_LABELS:
                raise RequestError("labels", f"at most {MAX_LABELS} labels")
            for label in labels:
                _check_text("labels", label, 128)
            if len(set(labels)) != len(labels):
                raise RequestError("labels", "each label at most once")
            check_priority(priority)
            if gpus is not None and not 1 <= len(set(gpus)) == len(gpus) <= MAX_GPUS:
                raise RequestError("gpus", f"1 to {MAX_GPUS} distinct GPU uuids")
            if request is not None:
                request = request.validated()
        except RequestError as err:
            return ValidationError(err.field, err.message)

        fingerprint_of = partial(
            request_fingerprint, holder=holder, request=request, gpus=gpus, priority=priority,
            preemptible=preemptible, labels=labels, allow_preemption=allow_preemption,
        )  # fmt: skip
        key_use = None
        fingerprint = None  # only a key's reservation stores one (a digest per reserve cost ~4% of its CPU)
        if idempotency_key is not None:
            fingerprint = fingerprint_of(ttl_s=ttl)  # the lease as it takes effect
            earlier_forms = (fingerprint_of(ttl_s=ttl_s, form="stop46"), fingerprint_of(ttl_s=ttl_s, form="legacy"))
            key_use = KeyUse(idempotency_key, (fingerprint, *earlier_forms))
            if self.key_group is not None:
                earlier = await self.key_group.submit(idempotency_key)
                existing = [earlier] if earlier is not None else []
            else:
                existing = await self.get_many(keys=[idempotency_key])
            if existing:
                return await self._replay(existing[0], holder, owner or holder, key_use.fingerprints)
        reservation_id = f"rsv-{uuid.uuid4().hex[:20]}"
        props: ReservationProps = {
            "id": reservation_id,
            "holder": holder,
            "state": "active",
            "priority": priority,
            "preemptible": preemptible,
            "labels": list(labels),
            "idempotency_key": idempotency_key or reservation_id,
            "gpu_count": 0,
            "owner": owner or holder,
        }
        if fingerprint is not None:
            props["request_hash"] = fingerprint
        outcome = await self._reserve_new(request, gpus, props, ttl, key_use, explain=explain)
        if allow_preemption and request is not None and isinstance(outcome, (Conflict, Infeasible)):
            # (A list of GPUs is never preempted for: it answers as without allowPreemption.)
            raced = await self._raced(key_use, holder, owner)
            if raced is not None:
                return raced  # not a second set of victims for a key whose reservation exists
            preempted = await self._reserve_preempting(request, props, ttl)
            if preempted is not None:
                return preempted
        if isinstance(outcome, (Conflict, Infeasible)):
            return await self._raced(key_use, holder, owner) or outcome
        return outcome

    async def _raced(self, key: KeyUse | None, holder: str, owner: str | None) -> ReserveOutcome | None:
        """The key's reservation, made meanwhile by a concurrent first attempt with the same key (a
        client retrying while its first attempt still ran), answered as a replay; None: no key, or
        none made. Such a loser usually fails on capacity (the winner took the GPUs) before it
        reaches the key's unique constraint, and answered Infeasible or Conflict while its key held
        GPUs (a fault probe's case; docs/reservations.md promises the winner's reservation)."""
        if key is None:
            return None
        found = await self.get_many(keys=[key.key])
        return await self._replay(found[0], holder, owner or holder, key.fingerprints) if found else None

    async def _reserve_new(
        self,
        request: PlacementRequest | None,
        gpus: Sequence[str] | None,
        props: ReservationProps,
        ttl: int,
        key_use: KeyUse | None,
        *,
        explain: bool,
    ) -> ReserveOutcome:
        """A reservation not made before with its key: by GPU list, MIG slices, one host's match-and-
        take, or a placement."""
        if gpus is not None:
            return await self._reserve_exact(list(gpus), props, ttl, key_use)
        assert request is not None
        props["request"] = format_request(request)
        if request.mig_profile is not None:
            return await self._reserve_slices(request, props, ttl, key_use)
        fast = await self._reserve_in_host(request, props, ttl, key_use)
        if fast is not None:
            return fast
        # Lapsed leases free their GPUs now, not at the reaper's next run: the candidate
        # search reads free counters, which only a reaped reservation gives back.
        await self.expire_due()
        return await self._reserve_placed(request, props, ttl, key_use, explain)

    # ---- preemption -------------------------------------------------------------------

    async def preemption_plan(
        self, request: PlacementRequest, priority: int, *, policy: str = "checkpoint", grace_s: float = 0.0
    ) -> PreemptionPlan:
        """Which victims to end: by default the set that loses the least work since its
        checkpoints (`checkpoints.py`); `policy="priority"` is the older fewest-victims rule."""
        try:
            request = request.validated()
        except RequestError as err:
            return PreemptionPlan(False, [], [], [], 0, 0, f"invalid request: {err}")
        if request.mig_profile is not None:  # slices are not preemptible (checkpoints.infeasible_reason)
            return PreemptionPlan(False, [], [], [], 0, 0, checkpoints.infeasible_reason(request.mig_profile))
        rows = as_holding_rows(await self.gw.read("reservations/preemptible_holdings", {"priority": priority}))
        moment = self.clock() + grace_s
        cost = {r["reservation"]: checkpoints.lost_gpu_seconds(_progress(r), moment) for r in rows}
        victims = {
            r["reservation"]: PreemptionVictim(
                r["reservation"], r["holder"], int(r["priority"] or 0), list(r["gpus"]), cost[r["reservation"]]
            )
            for r in rows
        }
        owner = {g: v.reservation for v in victims.values() for g in v.gpus}
        # The victims' hosts and their neighbours (same NVLink domains, same leaves): the counters
        # show the engine only free GPUs, so a placement mixing freed and free GPUs (the rest of
        # a rack or a leaf) is found only if the free neighbours are searched with the victims.
        near = await self.gw.read(
            "reservations/preemption_neighbourhood",
            {"hosts": sorted({h for r in rows for h in r["hosts"]}), "limit": MAX_PREEMPTION_HOSTS},
        )
        hosts = tuple(sorted({h for r in rows for h in r["hosts"]} | {str(r["name"]) for r in near}))
        result = await self.engine.place(
            request.with_(limit=20), explain_infeasible=False, virtual_free=frozenset(owner), extra_hosts=hosts
        )
        options = []
        for i, c in enumerate(result.candidates):
            displaced = tuple(sorted({owner[g.uuid] for g in c.gpus if g.uuid in owner}))
            options.append(checkpoints.Option(i, displaced, sum(victims[v].priority for v in displaced), c.score))
        chosen = checkpoints.choose(options, cost, policy=policy)
        if chosen is None:
            return PreemptionPlan(False, [], [], [], 0, 0, checkpoints.infeasible_reason(None))
        option, lost = chosen
        c, chosen_victims = result.candidates[option.key], list(option.victims)
        names = ", ".join(f"{v} ({victims[v].holder}, priority {victims[v].priority})" for v in chosen_victims)
        reason = (
            f"ends {len(chosen_victims)} preemptible reservation(s): {names}. "
            if chosen_victims
            else "needs no preemption. "
        ) + c.reason
        if chosen_victims and policy != "priority":
            others = sorted({round(sum(cost[v] for v in o.victims) / 3600, 2) for o in options if o.victims})
            reason += (f" Chosen for the least lost work: {lost / 3600:.2f} GPU-hours since the victims' last "
                       f"checkpoints, restarts included (the {len(options)} options considered lose "
                       f"{', '.join(str(x) for x in others[:5])} GPU-hours).")  # fmt: skip
        return PreemptionPlan(
            True,
            sorted(g.uuid for g in c.gpus),
            [h.name for h in c.hosts],
            [victims[v] for v in chosen_victims],
            c.largest_free_block_before,
            c.largest_free_block_after,
            reason,
            lost,
        )

    async def _reserve_preempting(
        self, request: PlacementRequest, props: ReservationProps, ttl: int
    ) -> Reservation | None:
        for _ in range(self.max_attempts):
            plan = await self.preemption_plan(request, int(props["priority"]))
            if not plan.feasible:
                return None
            try:
                if not plan.victims:  # free GPUs after all: a plain reserve, answered as stored
                    created = await self._write(plan.gpus, props, ttl)
                else:
                    created = await self._preempt(plan, props, ttl)
            except StoreConstraintError:
                return None  # its key was taken meanwhile (nothing written): `reserve` answers the key's

            if created is not None:
                await self.events.publish(Event("reservation.created", created.id, created.holder, self.clock()))
                return created
        return None

    async def _preempt(self, plan: PreemptionPlan, props: ReservationProps, ttl: int) -> Reservation | None:
        """The plan's victims ended and its GPUs taken in one write; the reservation made (read
        back), or None when the plan no longer holds."""
        now = self.clock()
        full: ReservationProps = {**props, "created_at": now, "expires_at": now + ttl, "gpu_count": len(plan.gpus)}
        params: dict[str, object] = {
            "uuids": plan.gpus, "props": full, "now": now, "victims": [v.reservation for v in plan.victims]
        }  # fmt: skip
        if not await self.gw.write("reservations/preempt_and_reserve", params):
            return None
        for v in plan.victims:
            await self.events.publish(Event("reservation.preempted", v.reservation, v.holder, now))
        return await self._made(full["id"])

    async def _made(self, reservation_id: str) -> Reservation:
        """A reservation a write reported made, read back (the writers that do not answer it: a
        preemption, MIG slices). Not found is a broken invariant, raised: read as "nothing taken"
        it would plan again under the same id (a preemption ending a second set of victims)."""
        made = await self.get(reservation_id)
        if made is None:
            raise RuntimeError(f"reservation {reservation_id} was written but is not there to read back")
        return made

    async def _replay(
        self, existing: Reservation, holder: str, owner: str, fingerprints: tuple[str, ...]
    ) -> ReserveOutcome:
        """A reserve with a key already used: the same request gets its reservation back (the
        request's `fingerprints`: the digest stored now, and any a retry across a deploy may
        find stored). Only its own caller's: another caller naming the same holder and key would
        believe it holds GPUs it may not renew or release (its owner's or an operator's only)."""
        if existing.idempotency_key == existing.id:
            # A reservation made without a key stores its id as its key (keys are unique in the
            # graph): this key is that id, not a key any reserve was made with.
            return ValidationError(
                "idempotencyKey", f"{existing.id!r} is a reservation's id, not an idempotency key; use another key"
            )
        if existing.holder != holder:
            return ValidationError("idempotencyKey", "this key belongs to another holder's reservation")
        if existing.owner is not None and existing.owner != owner:
            return ValidationError("idempotencyKey", "this key belongs to a reservation another caller made")
        rows = await self.gw.read("reservation_request_hash", {"key": existing.idempotency_key})
        stored = rows[0]["request_hash"] if rows else None
        if stored is not None and fingerprints and stored not in fingerprints:
            return IdempotencyKeyMismatch(
                existing.idempotency_key,
                existing.id,
                f"idempotency key {existing.idempotency_key!r} was used for reservation {existing.id} with a "
                "different request; use a new key for a new request",
            )
        return as_seen(existing, self.clock())  # a retry after the lease ran out hears it expired

    async def _write(self, uuids: list[str], props: ReservationProps, ttl: int) -> Reservation | None:
        """The reservation as the write stored it (nothing read back), or None: nothing taken."""
        now = self.clock()
        props = {**props, "created_at": now, "expires_at": now + ttl, "gpu_count": len(uuids)}
        return _stored(await self.gw.write("reservations/reserve_gpus", {"uuids": uuids, "props": props, "now": now}))

    async def _reserve_in_host(
        self, request: PlacementRequest, props: ReservationProps, ttl: int, key: KeyUse | None
    ) -> ReserveOutcome | None:
        """Match and take in one statement (fastpath.py); None: not that shape, or no host had it."""
        mode = fast_path_mode(request)
        if mode is None:
            return None
        facts = await self.engine.facts.fresh()
        models = accepted_models(facts.models, request)
        if not models:
            return None
        stale_after = self.engine.stale_after_s
        if self.group is not None:
            now = self.clock()
            full = {**props, "created_at": now, "expires_at": now + ttl, "gpu_count": request.gpus}
            item = batch_item(request, mode, models, full, stale_after_s=stale_after)
            try:
                made = await self.group.submit(item)
            except StoreConstraintError:
                made = None  # an idempotency key raced in this batch: the single path below sorts it out
            if isinstance(made, StoreError):
                raise made  # its own statement failed (_write_batch)
            assert not isinstance(made, Released)  # a reserve's answer (_write_moment keeps each kind's)
            if made is not None:
                await self.events.publish(Event("reservation.created", made.id, made.holder, self.clock()))
                return made
        for attempt in range(self.fast_attempts):

            async def write(attempt: int = attempt) -> Reservation | None:
                now = self.clock()
                full = {**props, "created_at": now, "expires_at": now + ttl, "gpu_count": request.gpus}
                seed = key.key if key is not None else str(props["id"])
                params = in_host_params(
                    request, mode, models, full, seed=seed, attempt=attempt, now=now,
                    stale_before=None if stale_after is None else now - stale_after,
                )  # fmt: skip
                form = candidate_read("reservations/reserve_in_host", facts.hosts, self.scan_every_host_up_to)
                return _stored(await self.gw.write(form, params))

            done = await self._attempt_with(write, props, key)
            if done is not None:
                return done
        return None

    async def _write_moment(self, items: list[Moment]) -> list[MomentAnswer]:
        """A group commit's batch: its single-host reserves and its releases, each answered in
        order (a reserve: the reservation made, None: not taken here, or the store error of its
        own statement; a release: the reservation it ended, None: not ended here, or its
        statement's error). Where the store runs writes one at a time the releases ride in the
        reserves' first statement (reserve_release_batch: one statement's fixed cost, not two);
        where writes run concurrently the two kinds go as two statements at once, each taking its
        locks in the one global order (one statement doing both would lock in two rounds)."""
        ids = [item.reservation_id for item in items if isinstance(item, ReleaseItem)]
        reserves = [item for item in items if isinstance(item, BatchItem)]
        if self.gw.serial_writes or not (ids and reserves):
            made, released = await self._write_batch(reserves, ids)
        else:
            (made, _), (_, released) = await asyncio.gather(self._write_batch(reserves, []), self._write_batch([], ids))
        answers: list[MomentAnswer] = []
        answered: set[str] = set()
        for item in items:
            if isinstance(item, BatchItem):
                answers.append(made.get(str(item.request["props"]["id"])))
            elif isinstance(released, StoreError):
                answers.append(released)
            else:  # a duplicate id answers on its own, as ended already (no second event)
                answers.append(None if item.reservation_id in answered else released.get(item.reservation_id))
                answered.add(item.reservation_id)
        return answers

    async def _write_batch(
        self, reserves: list[BatchItem], releasing: list[str]
    ) -> tuple[dict[str, Reservation | StoreError], dict[str, Released] | StoreError]:
        """Single-host reserves in one statement per shared key (usually one), the releases in the
        first of them, or alone when no reserve waits (release_batch). The reservations made and
        the statement errors by reserve id; the reservations ended by id, or the error of the
        statement that carried them. One error for the whole batch told the requests an earlier
        statement had committed that the store failed: a retry without a key took a second
        reservation (a fault probe's case)."""
        by_key: dict[BatchKey, list[BatchRequest]] = {}
        for item in reserves:
            by_key.setdefault(item.key, []).append(item.request)
        made: dict[str, Reservation | StoreError] = {}
        released: dict[str, Released] | StoreError = {}
        now = self.clock()
        ending = {"ids": sorted(set(releasing)), "now": now, "state": "released"}
        if releasing and not by_key:
            try:
                return made, await self._ended(await self.gw.write("reservations/release_batch", ending), "")
            except StoreError as err:
                return made, err
        for n, (key, requests) in enumerate(by_key.items()):
            with_releases = n == 0 and bool(releasing)
            statement, params = "reservations/reserve_in_host_batch", batch_params(key, requests, now)
            if with_releases:
                statement, params = "reservations/reserve_release_batch", params | ending
            # The form for this cluster's size (fastpath.candidate_read): the host count as the
            # graph facts hold it (each request refreshed them before it joined the batch).
            form = candidate_read(statement, self.engine.facts.hosts, self.scan_every_host_up_to)
            try:
                rows = await self.gw.write(form, params)
            except StoreConstraintError:
                # An idempotency key raced in this statement (nothing of it was written): its
                # requests go on alone, where the race is resolved, and its releases by themselves;
                # other statements of the batch stand.
                if with_releases:
                    _, released = await self._write_batch([], releasing)
                continue
            except StoreError as err:
                made.update((str(request["props"]["id"]), err) for request in requests)
                if with_releases:
                    released = err
                continue
            if not rows:
                continue
            # The statement returns each reservation as stored and the GPUs it took (and each one
            # it ended): nothing is read back (one round trip per batch, not two).
            row = rows[0]
            for rid, props, taken in zip(row["ids"], row["reservations"], row["taken"], strict=True):
                made[str(rid)] = _reservation(_written_row(cast(ReservationProps, props), taken, held=True))
            if with_releases:
                released = await self._ended(rows, "released_")
        return made, released

    async def _ended(self, rows: Sequence[Row], prefix: str) -> dict[str, Released]:
        """The reservations a release batch ended, by id, from its one row (release_batch, or
        reserve_release_batch's `released_` columns): each as the statement left it (no read back),
        its properties and the GPUs it held, none of them held any more; and whether a preemption
        named it as a victim (its preempt_by, read under its lock; the Reservation shows it only
        while live)."""
        found: dict[str, Released] = {}
        if rows:
            row = rows[0]
            columns = (row[f"{prefix}{name}"] for name in ("ids", "reservations", "taken"))
            for rid, props, taken in zip(*columns, strict=True):
                reservation = _reservation(_written_row(cast(ReservationProps, props), taken, held=False))
                found[str(rid)] = Released(reservation, awaited=props.get("preempt_by") is not None)
        await self._with_slices([r.reservation for r in found.values()])  # (MIG slices, should one be here)
        return found

    async def _by_keys(self, keys: list[str]) -> list[Reservation | None]:
        """The reservations made with these idempotency keys (None: none yet), in one read."""
        found = {r.idempotency_key: r for r in await self.get_many(keys=sorted(set(keys)))}
        return [found.get(k) for k in keys]

    async def _attempt(
        self, uuids: list[str], props: ReservationProps, ttl: int, key: KeyUse | None
    ) -> ReserveOutcome | None:
        """One write; the reservation, or None when a GPU was taken (or the key raced in)."""
        return await self._attempt_with(lambda: self._write(uuids, props, ttl), props, key)

    async def _attempt_with(
        self,
        write: Callable[[], Awaitable[Reservation | None]],
        props: ReservationProps,
        key: KeyUse | None,
    ) -> ReserveOutcome | None:
        """`write` answers the reservation it stored, or None: nothing taken. A constraint error
        (the idempotency key raced in) answers the reservation made with that key."""
        try:
            written = await write()
        except StoreConstraintError:
            if key is not None:
                existing = await self.get_many(keys=[key.key])
                if existing:
                    return await self._replay(existing[0], props["holder"], props["owner"], key.fingerprints)
            raise
        if written is None:
            return None
        await self.events.publish(Event("reservation.created", written.id, written.holder, self.clock()))
        return written

    async def _reserve_exact(
        self, uuids: list[str], props: ReservationProps, ttl: int, key: KeyUse | None
    ) -> ReserveOutcome:
        """The write first: it takes nothing unless every GPU is known, free and not MIG-enabled,
        so why it took nothing is read only then (a reserve that succeeds is one round trip)."""
        done = await self._attempt(sorted(uuids), props, ttl, key)
        if done is not None:
            return done
        known = await self.gw.read("gpus_by_uuid", {"uuids": uuids})
        missing = sorted(set(uuids) - {r["uuid"] for r in known})
        if missing:
            return ValidationError("gpus", f"unknown GPU uuid(s): {', '.join(missing[:10])}")
        partitioned = sorted(str(r["uuid"]) for r in known if r.get("mig_mode"))
        if partitioned:  # a MIG-enabled GPU is handed out in slices, never whole
            return ValidationError(
                "gpus", f"MIG-enabled GPU(s) {', '.join(partitioned[:10])}: reserve their slices (e.g. 2x 3g.40gb)"
            )
        return await self._conflict(uuids)

    async def _reserve_slices(
        self, request: PlacementRequest, props: ReservationProps, ttl: int, key: KeyUse | None
    ) -> ReserveOutcome:
        """MIG slices: ranked candidates (placement.mig), each tried in one conditional write."""
        tried = 0
        for _round in range(2):  # a second look if every candidate was taken under us
            try:
                found = await place_slices(
                    self.gw,
                    request.with_(limit=min(20, max(request.limit, self.max_attempts))),
                    now=self.clock(),
                    stale_after_s=self.engine.stale_after_s,
                )
            except RequestError as err:
                return ValidationError(err.field, err.message)
            if not found.candidates:
                if tried:
                    break
                return Infeasible(found.infeasible)
            for candidate in found.candidates[: self.max_attempts]:
                tried += 1

                async def write(candidate: SliceCandidate = candidate) -> Reservation | None:
                    now = self.clock()
                    full: ReservationProps = {
                        **props, "created_at": now, "expires_at": now + ttl, "slice_count": len(candidate.slices)
                    }  # fmt: skip
                    # Read back when taken: the reservation's slices are read with it (get).
                    taken = await mig_slices.take(self.gw, candidate, full, now)
                    return await self._made(props["id"]) if taken else None

                done = await self._attempt_with(write, props, key)
                if done is not None:
                    return done
        return Conflict(f"every candidate ({tried} tried) was taken by concurrent reservations", [], [])

    async def _reserve_placed(
        self,
        request: PlacementRequest,
        props: ReservationProps,
        ttl: int,
        key: KeyUse | None,
        explain: bool = True,
    ) -> ReserveOutcome:
        tried = 0
        seen: set[tuple[str, ...]] = set()
        last: list[str] = []
        # Concurrent reserves of one shape rank the same candidates: trying them all in rank order,
        # 16-32 of them collided down the same list and most answered Conflict while the cluster
        # had room (an adversarial trial: 21 of 30 `16xH100 per-host=8`; a leaf group yields one
        # candidate, the same for all). The first attempt is the best candidate (a lone reserve
        # gets it); after a collision this request tries the rest in its own random order and
        # looks again with equally good hosts in its own order (`tie_seed`), until PLACED_ROUNDS
        # rounds or max_attempts per round are spent.
        spread = random.Random(str(props.get("id", "")))
        for round_ in range(PLACED_ROUNDS):
            ask = request.with_(limit=min(20, max(request.limit, self.max_attempts * (round_ + 1))))
            # After a collision: equally good hosts in this request's own order (a fresh seed a round).
            seed = spread.randrange(2**31) if tried else None
            result = await self.engine.place(ask, explain_infeasible=explain, reap=False, tie_seed=seed)
            if not result.candidates:
                if tried:
                    break
                return Infeasible(result.infeasible if explain else await self._cheap_reasons(request))
            fresh = [c for c in result.candidates if tuple(sorted(g.uuid for g in c.gpus)) not in seen]
            best = fresh[:1] if not tried else []  # before any collision, the best candidate first
            order = best + spread.sample(fresh[len(best) :], len(fresh) - len(best))
            for candidate in order[: self.max_attempts]:
                tried += 1
                last = sorted(g.uuid for g in candidate.gpus)
                seen.add(tuple(last))
                done = await self._attempt(last, props, ttl, key)
                if done is not None:
                    return done
        return await self._conflict(last, f"every candidate ({tried} tried) was taken by concurrent reservations")

    async def _cheap_reasons(self, request: PlacementRequest) -> list[InfeasibleReason]:
        """Why nothing fits, without the diagnosis's extra searches: an unknown model, or one line.
        The models are the engine's kept list (graph_facts), as its own diagnosis reads them: a
        model missing from that list made the search just read it again, so no read here (one
        statement less per infeasible reserve)."""
        unknown = await unknown_model(self.gw, request, await self.engine.models())
        if unknown:
            return unknown
        text = format_request(request)
        return [
            InfeasibleReason(
                "placement",
                f"nothing free fits {text!r} now; reserve with explain (or ask placement) for which constraint "
                "blocks it and the nearest request that fits",
            )
        ]

    async def _conflict(self, uuids: list[str], message: str | None = None) -> Conflict:
        rows = await self.gw.read("reservations/gpu_holders", {"uuids": uuids, "now": self.clock()})
        holders = [Holder(r["uuid"], r["reservation"], r["holder"]) for r in rows]
        return Conflict(message or f"{len({h.gpu_uuid for h in holders})} of these GPUs are held", uuids, holders)

    # ---- leases -----------------------------------------------------------------------

    async def renew(
        self, reservation_id: str, ttl_s: int | None = None
    ) -> Reservation | LeaseExpired | NotFound | ValidationError:
        """Extend the lease from now by `ttl_s`, or without one by the lease last granted (what
        `reserve` or the last renew gave; the statement reads it), so a scheduler that renews
        without a TTL keeps the lease it asked for instead of falling to the service's default."""
        try:
            lease = LeaseTerms(
                ttl_s=None if ttl_s is None else self._ttl(ttl_s),
                default_ttl_s=min(self.default_ttl_s, self.max_ttl_s),
                max_ttl_s=self.max_ttl_s,
            )
        except RequestError as err:
            return ValidationError(err.field, err.message)
        if not _printable(reservation_id):
            return NotFound(reservation_id, "no such reservation")
        for _ in range(self.max_attempts):
            now = self.clock()
            rows = await self.gw.write("reservations/renew_reservation", {"id": reservation_id, "now": now, **lease})
            if rows:  # the reservation as renewed: a release after it is the release's answer, not this one's
                renewed = _reservation(
                    _written_row(cast(ReservationProps, rows[0]["reservation"]), rows[0]["taken"], held=True)
                )
                await self.events.publish(Event("reservation.renewed", renewed.id, renewed.holder, now))
                return renewed
            current = await self.get(reservation_id)
            if current is None:
                return NotFound(reservation_id, f"no reservation {reservation_id!r}")
            if current.slice_count and await mig_slices.renew(self.gw, reservation_id, now, lease):
                sliced = await self.get(reservation_id)
                assert sliced is not None
                await self.events.publish(Event("reservation.renewed", sliced.id, sliced.holder, now))
                return sliced
            if current.state != "active" or current.expires_at < now:
                break
            # Live and unexpired, yet not renewed: a resize committed between the statement's read
            # of the GPUs and its locks (Neo4j), so the GPUs it locked were not all it owns. Again.
        assert current is not None  # the loop runs at least once and returns on None
        if current.state == "active" and current.expires_at >= now:
            # Live, but the statement renews only a reservation that still owns every GPU it was
            # given: one is gone (its host stopped reporting it: fallen off the bus, removed). The
            # lease cannot go on, so it ends now and its other GPUs are freed: it said so and kept
            # them, live, until its lease ran out (up to the longest TTL; a probe's case).
            await self.release(reservation_id, state="expired")
            return LeaseExpired(
                reservation_id,
                now,
                "it no longer holds every GPU (or MIG slice) it was given: its host stopped reporting one; "
                "the lease ended and its other GPUs are free: reserve again",
            )
        if current.state == "active" or current.state == "expired":
            return LeaseExpired(reservation_id, current.expires_at, "the lease ran out; reserve again")
        if current.state == "pending":
            # A preemption in its grace period holds nothing yet: its lease starts when it completes,
            # so there is nothing to extend, and it is answered as it is. LeaseExpired stopped a
            # holder's renewals (the client's `hold`) while the preemption went on to take the GPUs
            # with a lease nobody renewed (a fault probe's case).
            return current
        return LeaseExpired(
            reservation_id, current.ended_at or current.expires_at, f"the reservation was {current.state}"
        )

    async def release(self, reservation_id: str, *, state: str = "released") -> Reservation | NotFound:
        """Idempotent: releasing an ended reservation returns it as it is."""
        if not _printable(reservation_id):
            return NotFound(reservation_id, "no such reservation")
        if self.group is not None and state == "released":
            outcome = await self.group.submit(ReleaseItem(reservation_id))
            if isinstance(outcome, StoreError):
                raise outcome  # its batch's statement failed (_write_moment)
            assert not isinstance(outcome, Reservation)  # a release's answer (_write_moment keeps each kind's)
            if outcome is not None:
                released = outcome.reservation
                await self.events.publish(
                    Event(_ended(released.state), released.id, released.holder, self.clock(), awaited=outcome.awaited)
                )
                return released
        for _ in range(self.max_attempts):
            rows = await self.gw.write(
                "reservations/release_reservation", {"id": reservation_id, "now": self.clock(), "state": state}
            )
            if not rows:
                # Holds nothing (all taken over) or already ended: end it without GPU changes if still live.
                rows = await self.gw.write(
                    "reservations/end_empty_reservation", {"id": reservation_id, "now": self.clock(), "state": state}
                )
            current = await self.get(reservation_id)
            if current is None:
                return NotFound(reservation_id, f"no reservation {reservation_id!r}")
            if rows or current.state != "active":
                break
            # Still live and holding GPUs: a grow committed between the statement's read of the
            # GPUs and its locks (Neo4j), so it freed nothing; read them again.
        assert current is not None  # the loop runs at least once and returns on None
        if current.state == "pending":
            # A preemption still in its grace period holds no GPU yet: releasing it cancels it, and
            # its victims keep their GPUs (end_preemption). It used to answer "pending" and take
            # the GPUs when the grace ran out.
            rows = await self.gw.write(
                "reservations/end_preemption", {"id": reservation_id, "now": self.clock(), "state": state}
            )
            current = await self.get(reservation_id)
            assert current is not None
            await tell_spared(self.events, rows, reservation_id, self.clock())
            if not rows and current.state == "active":
                # The grace tick completed it between the read and end_preemption: it holds its
                # GPUs now, and the holder asked to release it (it answered "active", held).
                return await self.release(reservation_id, state=state)
        if current.slice_count and current.state != "active" and any(s.held for s in current.slices):
            # A reservation of MIG slices holds no GPU: end_empty_reservation ended it (and `rows`
            # says so), or the reaper did, which says so itself; either way free its slices here.
            await mig_slices.free_ended(self.gw, [reservation_id])
            current = await self.get(reservation_id)
            assert current is not None
        if rows:
            await self.events.publish(Event(_ended(current.state), current.id, current.holder, self.clock()))
        return current

    async def _reap_for_placement(self) -> bool:
        """Placement found no candidate: end lapsed leases now (one cheap read when there are
        none), so it offers their GPUs as a reserve would take them."""
        return bool(await self.expire_due())

    async def expire_due(self, batch: int = 200) -> list[str]:
        """End every reservation whose lease ran out; the lease job calls this on a schedule."""
        expired: list[str] = []
        now = self.clock()
        if not await self.gw.read("reservations/lapsed_exists", {"now": now}):
            return expired
        while True:
            rows = await self.gw.write("reservations/expire_reservations", {"now": now, "limit": batch})
            ids = [i for r in rows for i in r["ids"]]
            await self._tell_expired(ids, now)
            expired.extend(ids)
            if len(ids) < batch:
                break
        empty = await self.gw.write("reservations/expired_without_gpus", {"now": now, "limit": 10_000})
        ids = [i for r in empty for i in r["ids"]]
        await self._tell_expired(ids, now)
        expired.extend(ids)
        if expired:
            log.info("lease reaper: %d reservation(s) expired", len(expired))
        return expired

    async def _tell_expired(self, ids: list[str], now: float) -> None:
        """The end of the reservations one statement expired: their MIG slices freed, their
        `reservation.expired` events, as soon as it committed. Told after every statement had
        run, a later statement's failure lost the events of those already committed: the next
        run no longer finds them live (a fault probe's case)."""
        if not ids:
            return
        found = {r.id: r for r in await self.get_many(ids=ids)}
        await mig_slices.free_ended(self.gw, [rid for rid, r in found.items() if r.slice_count])
        for rid in ids:
            holder = found[rid].holder if rid in found else ""
            await self.events.publish(Event("reservation.expired", rid, holder, now))

    async def prune_history(self, history_s: float, *, batch: int = 250, batches: int = 4) -> int:
        """Delete reservations that ended more than `history_s` ago (pages of `batch`, at most
        `batches` statements a call: the lease job calls this every tick, so a backlog drains
        over a few ticks instead of holding the store's writer in one long statement). Without
        it every reservation ever made stays in the graph, and the reads by state and lease
        grow with it. The pages go on after the last one's last reservation (`_prune_from`), so
        reservations left for later (a GPU or slice still marked for them) are passed over, not
        read again by every page; once a page comes back short the next call starts over.
        Returns how many were deleted."""
        before = self.clock() - history_s
        if not await self.gw.read("reservations/prunable_exists", {"before": before}):
            self._prune_from = PRUNE_START
            return 0
        pruned = 0
        for _ in range(batches):
            after, after_id = self._prune_from
            rows = await self.gw.write(
                "reservations/prune_ended", {"before": before, "from": after, "from_id": after_id, "limit": batch}
            )
            row = rows[0] if rows else {}
            pruned += int(row.get("pruned") or 0)
            if int(row.get("examined") or 0) < batch or row.get("last") is None:
                self._prune_from = PRUNE_START  # the end: the next call starts over
                break
            self._prune_from = (float(row["last"]), str(row["last_id"]))
        if pruned:
            log.info("history pruner: %d reservation(s) ended before %.0f deleted", pruned, before)
        return pruned


def _progress(row: HoldingRow) -> checkpoints.Progress:
    return checkpoints.Progress(
        gpus=len(row["gpus"]),
        created_at=float(row.get("created_at") or 0.0),
        last_checkpoint_at=row.get("last_checkpoint_at"),
        checkpoint_every_s=row.get("checkpoint_every_s"),
    )


def _printable(text: str) -> bool:
    return 0 < len(text) <= 256 and not _unprintable(text)


def _stored(rows: Sequence[Mapping[str, object]]) -> Reservation | None:
    """The reservation a one-reservation write answered (reserve_gpus, reserve_in_host) as
    stored, nothing read back; None: it took nothing."""
    if not rows:
        return None
    row = cast(WrittenRow, rows[0])
    return _reservation(_written_row(row["reservation"], row["taken"], held=True))


def _written_row(props: ReservationProps, taken: list[list[Any]], *, held: bool) -> ReservationRow:
    """A reservation_get row from what a write returned: the node's properties and its GPUs as
    [uuid, index, model, host, rack, scalable_unit] lists, in reservation_get's order."""
    gpus: list[HeldGpuRow] = [
        {"uuid": u, "index": int(i), "model": m, "host": h, "rack": rack, "scalable_unit": su, "held": held}
        for u, i, m, h, rack, su in sorted(taken, key=lambda t: (str(t[3]), int(t[1])))
    ]
    return {"reservation": props, "gpus": gpus}


def _reservation(row: ReservationRow) -> Reservation:
    r = row["reservation"]
    return Reservation(
        id=r["id"],
        holder=r["holder"],
        state=r["state"],
        created_at=r["created_at"],
        expires_at=r["expires_at"],
        priority=int(r.get("priority") or 0),
        preemptible=bool(r.get("preemptible")),
        labels=list(r.get("labels") or []),
        idempotency_key=r["idempotency_key"],
        request=r.get("request"),
        owner=r.get("owner"),
        ended_at=r.get("ended_at"),
        renewed_at=r.get("renewed_at"),
        slice_count=int(r.get("slice_count") or 0),
        lost_slices=list(r.get("lost_slices") or []),
        preempt_by=r.get("preempt_by") if r["state"] == "active" else None,
        preempt_at=r.get("preempt_at") if r["state"] == "active" else None,
        grace_ends_at=r.get("grace_ends_at") if r["state"] == "pending" else None,
        gpus=[
            ReservedGpu(
                uuid=g["uuid"],
                index=int(g["index"]),
                model=g.get("model") or "",
                host=g["host"],
                rack=g.get("rack"),
                scalable_unit=g.get("scalable_unit"),
                held=bool(g.get("held")),
            )
            for g in row["gpus"]
        ],
    )
