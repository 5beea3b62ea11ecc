"""Failed-host replacement: a GPU or host of a live reservation fails, the job gets a new one.

A week-long job that loses one node should not lose its place: the service finds
replacement GPUs that keep the job's layout (the healthy rest of the job is the layout to
keep; a replacement takes the failed GPU's rail, on the job's leaves, in its NVLink domain
where there is room), and proposes them in an event with the rank -> GPU map. A reservation
labelled `replace=auto` gets them at once, in the same atomic resize write that frees the
failed ones (`resize_reservation.cypher`, both lists at once); the failed GPUs go back as
free but stay marked unhealthy (or on a stale host), so placement does not offer them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from graphsvc.reservations.events import Event
from graphsvc.reservations.layout import replacement_plan
from graphsvc.reservations.resize import ElasticService, Live, Resized

AUTO_LABEL = "replace=auto"


@dataclass
class Replacement:
    """A proposal (or, with `applied`, a done replacement) for one reservation."""

    reservation: str
    holder: str
    failed: list[str]
    ranks: dict[int, str]  # rank -> new GPU uuid
    mapping: dict[str, str]  # failed uuid -> new uuid
    layout_kept: bool
    applied: bool
    reason: str


class ReplacementService:
    def __init__(self, elastic: ElasticService, *, stale_after_s: float | None = None) -> None:
        self.elastic = elastic
        self.rs = elastic.rs
        self.stale_after_s = stale_after_s
        # What each live reservation was already told, and about which failed GPUs: the lease job
        # looks every 30 s, and the holder hears each kind of news (unavailable, proposed) once per
        # set of failed GPUs. One entry per reservation, dropped when it ends, has nothing failed
        # any more or is replaced, and reset when its failed set changes, so it does not grow for
        # the life of the process. (Keyed by the lost set for both kinds, a proposal after an
        # "unavailable" counted as told: the holder never heard that spares had appeared.)
        self.told: dict[str, tuple[frozenset[str], set[str]]] = {}

    def _first_time(self, reservation_id: str, lost: frozenset[str], kind: str) -> bool:
        """Whether `kind` is news to this reservation's holder for this set of failed GPUs."""
        seen = self.told.get(reservation_id)
        if seen is None or seen[0] != lost:
            seen = self.told[reservation_id] = (lost, set())
        if kind in seen[1]:
            return False
        seen[1].add(kind)
        return True

    async def check(self, *, apply: bool | None = None, only: str = "", limit: int = 100) -> list[Replacement]:
        """Every live reservation with a failed or stale GPU: propose (and, when the reservation
        allows it or `apply` says so, reserve) replacements. `apply=False` only proposes."""
        now = self.rs.clock()
        stale = self.stale_after_s if self.stale_after_s is not None else self.rs.engine.stale_after_s
        cutoff = now - stale if stale is not None else -1.0
        rows = await self.rs.gw.read(
            "reservations/failed_holdings", {"now": now, "cutoff": cutoff, "limit": limit, "id": only}
        )
        if not only and len(rows) < limit:  # every reservation with a failed GPU: forget the others
            for gone in set(self.told) - {r["reservation"] for r in rows}:
                self.told.pop(gone, None)
        out = []
        for r in rows:
            auto = AUTO_LABEL in (r.get("labels") or [])
            done = await self.replace(r["reservation"], list(r["gpus"]), apply=auto if apply is None else apply)
            if done is not None:
                out.append(done)
        return out

    async def replace(self, reservation_id: str, failed: list[str], *, apply: bool) -> Replacement | None:
        for attempt in range(self.elastic.max_attempts):
            live = await self.elastic.live(reservation_id)
            if not isinstance(live, Live):
                self.told.pop(reservation_id, None)
                return None
            lost = [s for s in live.slots if s.uuid in set(failed)]
            if not lost:
                self.told.pop(reservation_id, None)
                return None
            if attempt and await self.elastic.lost_a_gpu(live) is not None:
                # the write was refused because a GPU left the graph: renew's rule ended the lease
                self.told.pop(reservation_id, None)
                return None
            lost_set = frozenset(s.uuid for s in lost)
            pool, fits = await self.elastic.pool(live, self.rs.clock())
            found = replacement_plan(live.slots, lost, pool)
            if found is not None and not fits([s for s in pool if s.uuid in set(found[0].values())]):
                found = None  # the spares chosen would not meet each other under its hop limit
            holder = live.reservation.holder
            now = self.rs.clock()
            if found is None:
                if not isinstance(await self.elastic.live(reservation_id), Live):
                    self.told.pop(reservation_id, None)  # it ended while we looked (an empty pool)
                    return None
                reason = f"no free GPUs near the job can replace {len(lost)} failed GPU(s)"
                if self._first_time(reservation_id, lost_set, "unavailable"):
                    await self.rs.events.publish(
                        Event("reservation.replacement_unavailable", reservation_id, holder, now, reason)
                    )
                return Replacement(reservation_id, holder, [s.uuid for s in lost], {}, {}, False, False, reason)
            mapping, kept = found
            order = live.rank_order
            ranks = {order.index(old): new for old, new in mapping.items()}
            detail = json.dumps({"ranks": {str(k): v for k, v in sorted(ranks.items())}, "failed": sorted(mapping)})
            reason = f"{len(mapping)} replacement GPU(s), layout {'kept' if kept else 'NOT kept'}"
            if not apply:
                if self._first_time(reservation_id, lost_set, "proposed"):
                    await self.rs.events.publish(
                        Event("reservation.replacement_proposed", reservation_id, holder, now, detail)
                    )
                return Replacement(reservation_id, holder, sorted(mapping), ranks, mapping, kept, False, reason)
            # the new GPUs take the failed ones' ranks: commit with the rank order rewritten
            done = await self._commit(live, mapping, kept, reason, detail)
            if isinstance(done, Resized):
                self.told.pop(reservation_id, None)  # the failed GPUs are gone from it
                return Replacement(reservation_id, holder, sorted(mapping), ranks, mapping, kept, True, reason)
            # Refused: a spare was taken, or failed, after the plan (the write takes only free GPUs
            # that are not unhealthy, as pool() offers them), or the reservation changed: again.
        return None

    async def _commit(
        self, live: Live, mapping: dict[str, str], kept: bool, reason: str, detail: str
    ) -> Resized | None:
        order = [mapping.get(u, u) for u in live.rank_order]
        now = self.rs.clock()
        rows = await self.rs.gw.write(
            "reservations/resize_reservation",
            {"id": live.reservation.id, "add": sorted(mapping.values()), "remove": sorted(mapping), "now": now,
             "gpu_count": len(order), "rank_order": order},
        )  # fmt: skip
        if not rows:
            return None
        current = await self.rs.get(live.reservation.id)
        assert current is not None
        await self.rs.events.publish(Event("reservation.replaced", current.id, current.holder, now, detail))
        return Resized(current, sorted(mapping.values()), sorted(mapping), kept, reason)
