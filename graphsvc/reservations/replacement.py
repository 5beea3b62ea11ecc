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
        # what was already proposed or reported: the lease job looks every few seconds, the
        # holder hears once per set of failed GPUs
        self.told: set[tuple[str, frozenset[str]]] = set()

    async def check(self, *, apply: bool | None = None, only: str = "", limit: int = 100) -> list[Replacement]:
        """Every live reservation with a failed or stale GPU: propose (and, when the reservation
        allows it or `apply` says so, reserve) replacements. `apply=False` only proposes."""
        now = self.rs.clock()
        stale = self.stale_after_s if self.stale_after_s is not None else self.rs.engine.stale_after_s
        cutoff = now - stale if stale is not None else -1.0
        rows = await self.rs.gw.read(
            "reservations/failed_holdings", {"now": now, "cutoff": cutoff, "limit": limit, "id": only}
        )
        out = []
        for r in rows:
            auto = AUTO_LABEL in (r.get("labels") or [])
            done = await self.replace(r["reservation"], list(r["gpus"]), apply=auto if apply is None else apply)
            if done is not None:
                out.append(done)
        return out

    async def replace(self, reservation_id: str, failed: list[str], *, apply: bool) -> Replacement | None:
        for _ in range(self.elastic.max_attempts):
            live = await self.elastic.live(reservation_id)
            if not isinstance(live, Live):
                return None
            lost = [s for s in live.slots if s.uuid in set(failed)]
            if not lost:
                return None
            pool, fits = await self.elastic.pool(live, self.rs.clock())
            found = replacement_plan(live.slots, lost, pool)
            if found is not None and not fits([s for s in pool if s.uuid in set(found[0].values())]):
                found = None  # the spares chosen would not meet each other under its hop limit
            holder = live.reservation.holder
            now = self.rs.clock()
            if found is None:
                reason = f"no free GPUs near the job can replace {len(lost)} failed GPU(s)"
                key = (reservation_id, frozenset(s.uuid for s in lost))
                if key not in self.told:
                    self.told.add(key)
                    await self.rs.events.publish(
                        Event("reservation.replacement_unavailable", reservation_id, holder, now, reason)
                    )
                return Replacement(reservation_id, holder, [s.uuid for s in lost], {}, {}, False, False, reason)
            mapping, kept = found
            seen = (reservation_id, frozenset(mapping))
            order = live.rank_order
            ranks = {order.index(old): new for old, new in mapping.items()}
            detail = json.dumps({"ranks": {str(k): v for k, v in sorted(ranks.items())}, "failed": sorted(mapping)})
            reason = f"{len(mapping)} replacement GPU(s), layout {'kept' if kept else 'NOT kept'}"
            if not apply:
                if seen not in self.told:
                    self.told.add(seen)
                    await self.rs.events.publish(
                        Event("reservation.replacement_proposed", reservation_id, holder, now, detail)
                    )
                return Replacement(reservation_id, holder, sorted(mapping), ranks, mapping, kept, False, reason)
            # the new GPUs take the failed ones' ranks: commit with the rank order rewritten
            done = await self._commit(live, mapping, kept, reason, detail)
            if isinstance(done, Resized):
                return Replacement(reservation_id, holder, sorted(mapping), ranks, mapping, kept, True, reason)
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
