"""In-process event bus for reservation and host events, fanned out to GraphQL subscribers.

Each subscriber gets a bounded queue; a subscriber too slow to keep up loses its oldest
events (and is told so by a `subscriber.lagged` event) rather than slowing the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from graphsvc.reservations.rows import EndedPreemptionRow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    kind: str  # reservation.created|renewed|released|expired|preempted|resized|..., host.stale|recovered|removed
    subject: str  # reservation id or host name
    holder: str
    at: float
    detail: str = ""  # what changed, for the elastic events (JSON for a rank -> GPU map)
    # Whether a pending preemption may wait on this reservation's end. False only where the write
    # that ended it read, under the reservation's lock, that no preemption names it as a victim
    # (release_batch: `preempt_by`, which begin_preemption sets under the same lock): the
    # preemption observer then has nothing to look for (GracefulPreemption.on_event).
    awaited: bool = True


class EventBus:
    def __init__(self, queue_size: int = 1000) -> None:
        self._subscribers: set[asyncio.Queue[Event]] = set()
        self.queue_size = queue_size
        # In-process reactions (the elastic module completes a preemption when its victims
        # release); awaited after the subscribers are fed; a failing one is logged, not raised.
        self.observers: list[Callable[[Event], Awaitable[None]]] = []

    async def publish(self, event: Event) -> None:
        for queue in list(self._subscribers):
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                queue.put_nowait(Event("subscriber.lagged", "", "", event.at))
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(event)
        for observer in list(self.observers):
            try:
                await observer(event)
            except Exception:
                log.exception("event observer failed on %s", event.kind)

    async def subscribe(self) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=self.queue_size)
        self._subscribers.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._subscribers.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


async def tell_spared(bus: EventBus, rows: Sequence[Mapping[str, object]], by: str, at: float) -> None:
    """A preemption that ended before it took anything (failed, or released in its grace period)
    spares its victims: each still live hears `reservation.preemption_withdrawn` (detail: the
    preemption's id), after the `preempting` warning it had. end_preemption's rows say who."""
    for row in cast(Sequence[EndedPreemptionRow], rows):
        for victim in row["spared"]:
            await bus.publish(Event("reservation.preemption_withdrawn", victim["id"], victim["holder"], at, by))
