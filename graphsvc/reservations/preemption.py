"""Preemption with a grace period: victims are told, may checkpoint, then their GPUs move.

Ending a training job without warning throws away everything since its last checkpoint.
`preempt` chooses the victims that lose the least work (`checkpoints.py`), then, instead of
ending them at once, writes the preempting reservation as `pending` and tells each victim
(`reservation.preempting`, with the deadline) in one statement (`begin_preemption.cypher`).
The GPUs move in one statement (`complete_preemption.cypher`) when the grace period ends or
as soon as every victim has released: the victims still live are preempted, their GPUs
freed and the pending reservation takes its GPUs, with the counters, or nothing changes. A
crash between the two statements leaves a pending reservation and warned victims, nothing
half-moved; the lease job completes it after a restart. If the GPUs were taken meanwhile
(a victim released early and someone else reserved its GPUs), the preemption fails
visibly (`reservation.preemption_failed`) and the victims are no longer promised.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.request import PlacementRequest, RequestError, format_request
from graphsvc.reservations.events import Event, tell_spared
from graphsvc.reservations.rows import ReservationProps
from graphsvc.reservations.service import (
    Infeasible,
    LeaseExpired,
    NotFound,
    PreemptionPlan,
    Reservation,
    ReservationService,
    ValidationError,
    _check_text,
)

log = logging.getLogger(__name__)

MAX_GRACE_S = 3600
MAX_CHECKPOINT_EVERY_S = 7 * 24 * 3600


@dataclass
class Pending:
    """A preemption waiting for its grace period: who is warned, and when the GPUs move."""

    reservation: Reservation
    plan: PreemptionPlan
    grace_ends_at: float


PreemptOutcome = Reservation | Pending | Infeasible | ValidationError


FAILED_MEANWHILE = "the GPUs were taken meanwhile; the preemption failed, reserve again"


class GracefulPreemption:
    def __init__(self, reservations: ReservationService) -> None:
        self.rs = reservations
        self.gw = reservations.gw
        # on_event: the tick that will start next (None: none asked for), and the task running them
        self._next_tick: asyncio.Future[None] | None = None
        self._ticker: asyncio.Task[None] | None = None

    # ---- progress reports -------------------------------------------------------------

    async def renew(
        self,
        reservation_id: str,
        ttl_s: int | None = None,
        *,
        last_checkpoint_at: float | None = None,
        checkpoint_every_s: float | None = None,
    ) -> Reservation | LeaseExpired | NotFound | ValidationError:
        """Renew, and record the holder's progress (what its preemption would cost)."""
        if last_checkpoint_at is None and checkpoint_every_s is not None:
            return ValidationError("checkpointEverySeconds", "give lastCheckpointAt with it")
        if last_checkpoint_at is not None and (not math.isfinite(last_checkpoint_at) or last_checkpoint_at < 0):
            return ValidationError("lastCheckpointAt", "must be a finite time in seconds since the epoch")
        if checkpoint_every_s is not None and not 1 <= checkpoint_every_s <= MAX_CHECKPOINT_EVERY_S:
            return ValidationError("checkpointEverySeconds", f"must be between 1 and {MAX_CHECKPOINT_EVERY_S}")
        out = await self.rs.renew(reservation_id, ttl_s)
        if isinstance(out, Reservation) and last_checkpoint_at is not None:
            # Within the job's life: a checkpoint before it started (0, the epoch) made its
            # preemption cost millions of GPU-hours and ranked it the costliest victim (a probe's
            # case); one in the future is now.
            at = min(max(last_checkpoint_at, out.created_at), self.rs.clock())
            await self.gw.write(
                "reservations/record_checkpoint",
                {"id": reservation_id, "last_checkpoint_at": at, "checkpoint_every_s": checkpoint_every_s},
            )
        return out

    # ---- preempting -------------------------------------------------------------------

    async def preempt(
        self,
        *,
        holder: str,
        request: PlacementRequest,
        priority: int,
        grace_s: int,
        ttl_s: int | None = None,
        labels: Sequence[str] = (),
        preemptible: bool = False,
        owner: str | None = None,
        policy: str = "checkpoint",
    ) -> PreemptOutcome:
        """Reserve for `request`, preempting lower-priority work after `grace_s` if it must."""
        try:
            _check_text("holder", holder, 256)
            if not 0 <= grace_s <= MAX_GRACE_S:
                raise RequestError("graceSeconds", f"must be between 0 and {MAX_GRACE_S}")
            ttl = self.rs._ttl(ttl_s)
            request = request.validated()
        except RequestError as err:
            return ValidationError(err.field, err.message)
        placed = await self.rs.reserve(
            holder=holder, request=request, ttl_s=ttl, priority=priority, labels=labels,
            preemptible=preemptible, owner=owner,
        )  # fmt: skip
        if isinstance(placed, (Reservation, ValidationError)):
            return placed
        last = Infeasible([])
        for _ in range(self.rs.max_attempts):
            plan = await self.rs.preemption_plan(request, priority, grace_s=grace_s, policy=policy)
            if not plan.feasible:
                return placed if isinstance(placed, Infeasible) else last
            if not plan.victims:
                exact = await self.rs.reserve(
                    holder=holder, gpus=plan.gpus, ttl_s=ttl, priority=priority, labels=labels,
                    preemptible=preemptible, owner=owner,
                )  # fmt: skip
                if isinstance(exact, Reservation):
                    return exact
                continue
            pending = await self._begin(plan, holder, request, priority, grace_s, ttl, labels, preemptible, owner)
            if pending is None:
                continue  # a victim ended or was promised to another preemption: plan again
            if grace_s == 0:
                done = await self.complete(pending.reservation.id)
                if isinstance(done, Reservation):
                    return done
                current = await self.rs.get(pending.reservation.id)
                if current is not None and current.state == "active":
                    return current  # the grace tick completed it first (its deadline is now)
                if current is None or current.state != "failed":
                    # Its holder released it meanwhile.
                    return ValidationError("id", f"the preemption ended {current.state if current else 'meanwhile'}")
                # It ended `failed` (the GPUs were taken meanwhile): plan again. It answered the
                # pending reservation, already failed, as if it were still to complete (a probe's
                # case); planning again after anything but a failure took a second set of victims.
                last = Infeasible([InfeasibleReason("gpus", FAILED_MEANWHILE, None)])
                continue
            return pending
        return last

    async def _begin(
        self,
        plan: PreemptionPlan,
        holder: str,
        request: PlacementRequest,
        priority: int,
        grace_s: int,
        ttl: int,
        labels: Sequence[str],
        preemptible: bool,
        owner: str | None,
    ) -> Pending | None:
        now = self.rs.clock()
        ends = now + grace_s
        rid = f"rsv-{uuid.uuid4().hex[:20]}"
        props: ReservationProps = {
            "id": rid, "holder": holder, "state": "pending", "priority": priority, "preemptible": preemptible,
            "labels": list(labels), "idempotency_key": rid, "gpu_count": 0, "owner": owner or holder,
            "request": format_request(request), "created_at": now, "expires_at": ends + ttl, "ttl_s": ttl,
            "grace_ends_at": ends, "pending_gpus": plan.gpus, "pending_victims": [v.reservation for v in plan.victims],
            "pending_lost_gpu_seconds": plan.lost_gpu_seconds,
        }  # fmt: skip
        rows = await self.gw.write(
            "reservations/begin_preemption", {"victims": props["pending_victims"], "props": props}
        )
        if not rows:
            return None
        for v in plan.victims:
            detail = json.dumps({"by": rid, "graceEndsAt": ends, "graceSeconds": grace_s})
            await self.rs.events.publish(Event("reservation.preempting", v.reservation, v.holder, now, detail))
        created = await self.rs.get(rid)
        assert created is not None
        await self.rs.events.publish(Event("reservation.pending", rid, holder, now, plan.reason))
        return Pending(created, plan, ends)

    async def complete(self, pending_id: str) -> Reservation | NotFound | ValidationError:
        """Move the GPUs now (grace over, or the victims released): all of it, or fail the preemption."""
        rows = await self.gw.read("reservations/reservation_get", {"ids": [pending_id], "keys": []})
        if not rows:
            return NotFound(pending_id, f"no reservation {pending_id!r}")
        props = rows[0]["reservation"]
        if props.get("state") != "pending":
            return ValidationError("id", f"the reservation is {props.get('state')}, not pending")
        now = self.rs.clock()
        params = {
            "id": pending_id, "uuids": list(props["pending_gpus"]), "victims": list(props["pending_victims"]),
            "now": now, "expires_at": now + float(props.get("ttl_s") or self.rs.default_ttl_s),
        }  # fmt: skip
        done = await self.gw.write("reservations/complete_preemption", params)
        if not done:  # a victim grew under the read: read once more
            done = await self.gw.write("reservations/complete_preemption", params)
        if not done:
            ended = await self.gw.write(
                "reservations/end_preemption", {"id": pending_id, "now": now, "state": "failed"}
            )
            if not ended:  # no longer pending: its holder released it meanwhile (release said so)
                return ValidationError("id", "the reservation is no longer pending")
            failed = await self.rs.get(pending_id)
            holder = failed.holder if failed is not None else ""
            await self.rs.events.publish(Event("reservation.preemption_failed", pending_id, holder, now))
            await tell_spared(self.rs.events, ended, pending_id, now)
            return ValidationError("id", FAILED_MEANWHILE)
        preempted = set(done[0]["preempted"])
        found = {r.id: r for r in await self.rs.get_many(ids=[pending_id, *preempted])}
        for vid in sorted(preempted):
            holder = found[vid].holder if vid in found else ""
            # A victim whose lease had run out is ended as expired (complete_preemption), and says so.
            # Not awaited: its GPUs went to this preemption, and the observer (on_event) would wait
            # for a tick from inside the tick that is running this.
            kind = "reservation.expired" if vid in found and found[vid].state == "expired" else "reservation.preempted"
            await self.rs.events.publish(Event(kind, vid, holder, now, pending_id, awaited=False))
        created = found[pending_id]
        await self.rs.events.publish(Event("reservation.created", created.id, created.holder, now))
        return created

    async def tick(self) -> list[str]:
        """Complete every pending preemption whose grace is over or whose victims all ended."""
        rows = await self.gw.read("reservations/pending_ready", {"now": self.rs.clock(), "limit": 100})
        completed = []
        for r in rows:
            out = await self.complete(r["id"])
            if isinstance(out, Reservation):
                completed.append(out.id)
        return completed

    async def on_event(self, event: Event) -> None:
        """A victim released or expired during its grace: move the GPUs now, not at the deadline.

        Every release and expiry comes here (a store read each), except a release whose own
        write read that no preemption waits on it (`Event.awaited`: the group-committed release,
        which a scheduler calls per job and which otherwise paid this read and its round trip
        each time). A batch of releases ends
        together: so the ticks run one at a time in a task of their own, and each event waits
        for the first tick that starts after it (whose read sees the event's write), shared
        with every event that arrived before that tick started. An event waits for at most the
        tick in progress and its own; a failing tick is that tick's events' error, and the next
        one still runs."""
        if event.kind not in ("reservation.released", "reservation.expired") or not event.awaited:
            return
        if self._next_tick is None:
            self._next_tick = asyncio.get_running_loop().create_future()
        waiting = self._next_tick
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._run_ticks())
        await asyncio.shield(waiting)

    async def _run_ticks(self) -> None:
        while self._next_tick is not None:
            this, self._next_tick = self._next_tick, None
            try:
                await self.tick()
            except Exception as err:  # noqa: BLE001 - handed to the events waiting on this tick
                this.set_exception(err)
                this.exception()  # retrieved here too: no "never retrieved" warning if none waits
            else:
                this.set_result(None)
