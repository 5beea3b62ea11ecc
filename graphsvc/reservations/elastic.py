"""One place to get the elastic services of a ReservationService (resize, graceful preemption,
replacement), created once per service and wired to its event bus, so that the API, the CLI
and the lease job share them without the reservation service knowing about them."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from graphsvc.reservations.events import Event
from graphsvc.reservations.preemption import GracefulPreemption
from graphsvc.reservations.replacement import ReplacementService
from graphsvc.reservations.resize import ElasticService
from graphsvc.reservations.service import ReservationService


@dataclass
class Elastic:
    resize: ElasticService
    preemption: GracefulPreemption
    replacement: ReplacementService

    async def tick(self) -> None:
        """The lease job's share: complete due preemptions, replace failed GPUs."""
        await self.preemption.tick()
        await self.replacement.check()


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
