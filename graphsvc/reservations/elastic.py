"""One place to get the elastic services of a ReservationService (resize, graceful preemption,
replacement), created once per service and wired to its event bus, so that the API, the CLI
and the lease job share them without the reservation service knowing about them."""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass

from graphsvc.reservations.events import Event
from graphsvc.reservations.preemption import GracefulPreemption
from graphsvc.reservations.replacement import ReplacementService
from graphsvc.reservations.resize import ElasticService
from graphsvc.reservations.service import ReservationService

log = logging.getLogger(__name__)

SWEEP_EVERY_TICKS = 12  # the orphan sweep reads every reserved GPU: once a minute at the 5 s default
REPLACE_EVERY_TICKS = 6  # the failed-GPU check reads every live reservation's GPUs: every 30 s


@dataclass
class Elastic:
    resize: ElasticService
    preemption: GracefulPreemption
    replacement: ReplacementService
    ticks: int = 0

    async def tick(self) -> None:
        """The lease job's share: complete due preemptions, replace failed GPUs, and now and
        then free GPUs left marked for an ended reservation (see free_orphaned_gpus)."""
        await self.preemption.tick()
        self.ticks += 1
        if self.ticks % REPLACE_EVERY_TICKS == 1:
            await self.replacement.check()
        if self.ticks % SWEEP_EVERY_TICKS == 1:
            await self.sweep()

    async def sweep(self) -> list[str]:
        """A safety net: release, expiry and preemption re-read a reservation's GPUs after its
        lock, so no known path leaves GPUs marked for an ended reservation; if one ever does,
        the capacity comes back within a minute and the warning says a path was missed."""
        rows = await self.resize.gw.write("reservations/free_orphaned_gpus", {"limit": 10_000})
        freed = [u for r in rows for u in r["freed"]]
        if freed:
            log.warning("orphan sweep freed %d GPU(s) marked for ended reservations: %s", len(freed), freed[:8])
        return freed


_BY_SERVICE: weakref.WeakKeyDictionary[ReservationService, Elastic] = weakref.WeakKeyDictionary()


def elastic_for(service: ReservationService) -> Elastic:
    found = _BY_SERVICE.get(service)
    if found is None:
        resize = ElasticService(service)
        found = Elastic(resize, GracefulPreemption(service), ReplacementService(resize))
        preemption = found.preemption

        async def observe(event: Event) -> None:
            await preemption.on_event(event)

        service.events.observers.append(observe)
        _BY_SERVICE[service] = found
    return found
