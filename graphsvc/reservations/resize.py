"""Elastic reservations: grow or shrink a live reservation in place, atomically.

A training job that moves to a bigger phase should not give its GPUs back and queue again
(it would lose its place and its layout). `resize` reads the job's neighbourhood (its hosts,
the hosts of its NVLink domains, the hosts on its leaves), chooses GPUs with the pure
planner in `layout.py`, and commits the change with one conditional write
(`queries/reservations/resize_reservation.cypher`) that locks in the global order like every
other GPU-state write: GPUs, counters, reservation. A write that loses a race (a GPU taken
under us) is retried with a fresh read, a bounded number of times, then answered `Conflict`.
Ranks are stable: a reservation keeps `rank_order` (the uuids in rank order); added GPUs
take the next ranks, removed ones leave their rank and the rest close up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graphsvc.placement.engine import HostLoader
from graphsvc.placement.model import Gpu, InfeasibleReason
from graphsvc.placement.select import UNHEALTHY
from graphsvc.reservations.events import Event
from graphsvc.reservations.layout import GrowPlan, Slot, plan_grow, plan_shrink
from graphsvc.reservations.reach import Reach, hop_limit
from graphsvc.reservations.rows import Notices, ReservationProps, ReservationRow, as_reservation_rows
from graphsvc.reservations.service import (
    Conflict,
    Infeasible,
    LeaseExpired,
    NotFound,
    Reservation,
    ReservationService,
    ValidationError,
    _printable,
    _reservation,
    as_seen,
)

MAX_NEIGHBOUR_HOSTS = 512


@dataclass
class Resized:
    """A resize that happened: the reservation as it is now, what moved, and whether the layout held."""

    reservation: Reservation
    added: list[str]
    removed: list[str]
    layout_kept: bool
    reason: str


ResizeOutcome = Resized | Conflict | Infeasible | ValidationError | NotFound | LeaseExpired


@dataclass
class Live:
    """A live reservation with its GPUs as layout sees them, in rank order."""

    reservation: Reservation
    props: ReservationProps
    slots: list[Slot]

    @property
    def rank_order(self) -> list[str]:
        return [s.uuid for s in self.slots]


def slot_of(g: Gpu) -> Slot:
    return Slot(uuid=g.uuid, host=g.host, index=g.index, domain=g.nvlink_domain, leaf=g.leaf, rail=g.rail)


def ordered(slots: Sequence[Slot], rank_order: Sequence[str] | None) -> list[Slot]:
    """Slots in rank order: the stored order first, then any others by host and index."""
    pos = {u: i for i, u in enumerate(rank_order or [])}
    return sorted(slots, key=lambda s: (pos.get(s.uuid, len(pos)), s.host, s.index))


class ElasticService:
    """Resize, phase-fit and (with `replacement.py`) failed-GPU replacement for live reservations."""

    def __init__(self, reservations: ReservationService) -> None:
        self.rs = reservations
        self.gw = reservations.gw
        self.max_attempts = reservations.max_attempts

    # ---- reading ----------------------------------------------------------------------

    async def _row(self, reservation_id: str) -> ReservationRow | NotFound:
        """One reservation as stored, or NotFound (an id that cannot be one, or none such)."""
        if not _printable(reservation_id):
            return NotFound(reservation_id, "no such reservation")
        rows = as_reservation_rows(
            await self.gw.read("reservations/reservation_get", {"ids": [reservation_id], "keys": []})
        )
        return rows[0] if rows else NotFound(reservation_id, f"no reservation {reservation_id!r}")

    async def live(self, reservation_id: str) -> Live | NotFound | LeaseExpired:
        row = await self._row(reservation_id)
        if isinstance(row, NotFound):
            return row
        res = _reservation(row)
        props = row["reservation"]
        now = self.rs.clock()
        if res.state != "active" or res.expires_at < now:
            seen = as_seen(res, now)  # a lapsed lease is expired, as every reader says, reaped or not
            return LeaseExpired(res.id, seen.ended_at or seen.expires_at, f"the reservation is {seen.state}")
        held = [g for g in res.gpus if g.held]
        loader = self.loader(now)
        hosts = await loader.load(sorted({g.host for g in held}))
        by_uuid = {g.uuid: g for h in hosts for g in h.gpus}
        slots = [slot_of(by_uuid[g.uuid]) for g in held if g.uuid in by_uuid]
        return Live(res, props, ordered(slots, props.get("rank_order")))

    async def notices(self, reservation_id: str) -> Notices | NotFound:
        """What a lease holder should know besides its lease: a preemption coming (by whom, when),
        its rank order (after a resize or a replacement), its phase and last reported checkpoint."""
        row = await self._row(reservation_id)
        if isinstance(row, NotFound):
            return row
        props = row["reservation"]
        res = _reservation(row)
        held = [g for g in res.gpus if g.held]
        pos = {u: i for i, u in enumerate(props.get("rank_order") or [])}
        ranked = sorted(held, key=lambda g: (pos.get(g.uuid, len(pos)), g.host, g.index))
        return {
            "id": res.id, "state": res.state, "rank_order": [g.uuid for g in ranked],
            "phase": props.get("phase"), "phases": list(props.get("phases") or []),
            "last_checkpoint_at": props.get("last_checkpoint_at"),
            "checkpoint_every_s": props.get("checkpoint_every_s"),
            "preempt_by": props.get("preempt_by") if res.state == "active" else None,
            "preempt_at": props.get("preempt_at") if res.state == "active" else None,
        }  # fmt: skip

    def loader(self, now: float) -> HostLoader:
        stale = self.rs.engine.stale_after_s
        return HostLoader(self.gw, now, stale_before=None if stale is None else now - stale)

    async def pool(self, live: Live, now: float) -> tuple[list[Slot], Callable[[Sequence[Slot]], bool]]:
        """Free, healthy GPUs of the job's model near it (not its own) on hosts that meet every
        host of the job under its IB hop limit (reach.py), and a check that added GPUs' hosts
        also meet each other."""
        rows = await self.gw.read(
            "reservations/resize_neighbourhood", {"id": live.reservation.id, "limit": MAX_NEIGHBOUR_HOSTS}
        )
        loader = self.loader(now)
        near = await loader.load([r["name"] for r in rows])
        job = await loader.load(sorted({s.host for s in live.slots}))
        reach = Reach(job, hop_limit(live.props.get("request")))
        hosts = [h for h in near if reach.joins(h)]
        by_name = {h.name: h for h in hosts}

        def fits(added: Sequence[Slot]) -> bool:
            return reach.together([by_name[n] for n in sorted({s.host for s in added}) if n in by_name])

        gpus = {g.uuid: g for h in hosts for g in h.gpus}
        models = {g.model for g in live.reservation.gpus if g.held}
        mine = set(live.rank_order)
        pool = [
            slot_of(g)
            for g in gpus.values()
            if g.uuid not in mine
            and g.state == "free"
            and (g.health or "").lower() not in UNHEALTHY
            and (not models or g.model in models)
        ]
        return sorted(pool, key=lambda s: (s.host, s.index)), fits

    async def lost_a_gpu(self, live: Live) -> LeaseExpired | None:
        """A write refused a reservation that reads live: if it holds fewer GPUs than it was
        granted (its host stopped reporting one), every resize would be refused the same way, for
        ever. Renew has the rule for that (its statement, under the reservation's lock, renews only
        a reservation that owns every GPU it was granted; when it cannot, the lease ends and its
        other GPUs are freed), so it is asked, not copied: LeaseExpired when it ended the
        reservation, None when it renewed it after all (this read raced a grow of the same
        reservation, which Neo4j's read committed allows; the lease is then extended by the lease
        last granted, as the holder's own renew would)."""
        held = sum(1 for g in live.reservation.gpus if g.held)
        if held >= int(live.props.get("gpu_count") or 0):
            return None
        renewed = await self.rs.renew(live.reservation.id)
        return renewed if isinstance(renewed, LeaseExpired) else None

    # ---- resizing ---------------------------------------------------------------------

    async def resize(
        self,
        reservation_id: str,
        *,
        gpus: int | None = None,
        remove: Sequence[str] = (),
        remove_ranks: Sequence[int] = (),
        keep_layout: bool = True,
    ) -> ResizeOutcome:
        """Grow to `gpus`, or shrink to it (the service chooses), or drop the named GPUs/ranks."""
        if gpus is not None and not 1 <= gpus <= 4096:
            return ValidationError("gpus", "must be between 1 and 4096")
        if gpus is None and not remove and not remove_ranks:
            return ValidationError("gpus", "give the new size, or the GPUs or ranks to remove")
        last: Resized | Conflict | None = None
        for attempt in range(self.max_attempts):
            live = await self.live(reservation_id)
            if not isinstance(live, Live):
                return live
            if live.props.get("slice_count"):  # MIG slices (reservations/mig.py) hold no GPU to grow from
                return ValidationError("gpus", "a reservation of MIG slices is not resized; reserve more or release it")
            if attempt and (ended := await self.lost_a_gpu(live)) is not None:
                return ended
            step = await self._plan(live, gpus, list(remove), list(remove_ranks), keep_layout)
            if isinstance(step, Infeasible):
                # Planned on a reservation that ended meanwhile (its neighbourhood is read only
                # through GPUs it still owns, so the pool came back empty): that is the answer, not
                # Infeasible with a hint to relax the layout of a job that is gone.
                again = await self.live(reservation_id)
                return step if isinstance(again, Live) else again
            if not isinstance(step, tuple):
                return step
            add, drop, kept, reason = step
            done = await self.commit(live, add, drop, kept, reason, kind="reservation.resized")
            if isinstance(done, Resized):
                return done
            last = done
        return last or Conflict("the GPUs chosen were taken by concurrent reservations", [], [])

    async def _plan(
        self, live: Live, gpus: int | None, remove: list[str], remove_ranks: list[int], keep_layout: bool
    ) -> tuple[list[str], list[str], bool, str] | ValidationError | Infeasible:
        have = live.rank_order
        if remove or remove_ranks:
            bad = [r for r in remove_ranks if not 0 <= r < len(have)]
            if bad:
                return ValidationError("removeRanks", f"rank(s) {bad[:5]} out of range 0..{len(have) - 1}")
            unknown = sorted(set(remove) - set(have))
            if unknown:
                return ValidationError("remove", f"not held by this reservation: {', '.join(unknown[:5])}")
            drop = list(dict.fromkeys([*remove, *(have[r] for r in remove_ranks)]))
            if len(drop) >= len(have):
                return ValidationError("remove", "a reservation keeps at least one GPU; release it instead")
            if gpus is not None and gpus != len(have) - len(drop):
                return ValidationError(
                    "gpus", f"removing {len(drop)} of {len(have)} GPUs leaves {len(have) - len(drop)}"
                )
            return [], drop, True, f"frees the {len(drop)} GPU(s) the holder named"
        assert gpus is not None
        if gpus == len(have):
            return [], [], True, "already this size"
        if gpus < len(have):
            hosts = sorted({s.host for s in live.slots})
            rows = await self.gw.read("reservations/free_counts", {"hosts": hosts})
            host_free = {r["host"]: int(r["host_free"] or 0) for r in rows}
            domain_free = {d["domain"]: int(d["free"] or 0) for r in rows for d in r["domains"] if d["domain"]}
            drop = plan_shrink(live.slots, len(have) - gpus, host_free, domain_free)
            return [], drop, True, f"frees the {len(drop)} GPU(s) that leave the largest free block"
        pool, fits = await self.pool(live, self.rs.clock())
        plan: GrowPlan | None = plan_grow(live.slots, pool, gpus - len(have), keep_layout=keep_layout, fits=fits)
        if plan is None:
            why = "keeping its layout (same NVLink domain, leaves and rails)" if keep_layout else "near it"
            hint = "keepLayout: false" if keep_layout else None
            return Infeasible([InfeasibleReason("resize", f"{gpus - len(have)} more GPU(s) are not free {why}", hint)])
        return plan.uuids, [], plan.layout_kept, plan.reason

    async def commit(
        self, live: Live, add: list[str], drop: list[str], kept: bool, reason: str, *, kind: str, detail: str = ""
    ) -> Resized | Conflict:
        """One conditional write; the new state, or a Conflict when a GPU was taken under us."""
        now = self.rs.clock()
        gone = set(drop)
        rank_order = [u for u in live.rank_order if u not in gone] + add
        if add or drop:
            rows = await self.gw.write(
                "reservations/resize_reservation",
                {"id": live.reservation.id, "add": sorted(add), "remove": sorted(drop), "now": now,
                 "gpu_count": len(rank_order), "rank_order": rank_order},
            )  # fmt: skip
            if not rows:
                return Conflict("the reservation or the GPUs changed under the resize", sorted(add), [])
        current = await self.rs.get(live.reservation.id)
        assert current is not None
        if add or drop:
            await self.rs.events.publish(Event(kind, current.id, current.holder, now, detail or reason))
        return Resized(current, add, drop, kept, reason)
