"""The lease job: expires lapsed reservations, reports hosts going stale or recovering, and
deletes reservations that ended longer ago than the history is kept.

Runs on an apscheduler AsyncIOScheduler inside the service. Placement does not wait for it:
a GPU whose hold has lapsed counts as free to the reserve write even before this runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.events import Event
from graphsvc.reservations.service import ReservationService
from graphsvc.store.errors import StoreUnavailableError
from graphsvc.store.outage_log import STORE_OUTAGES

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(
        self,
        service: ReservationService,
        *,
        stale_after_s: float,
        interval_s: float = 5.0,
        history_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`history_s`: how long ended reservations are kept (None: kept for good, as in tests
        that read them back later)."""
        self.service = service
        self.stale_after_s = stale_after_s
        self.history_s = history_s
        self.interval_s = interval_s
        self.clock = clock
        self.stale: set[str] | None = None
        self.scheduler: AsyncIOScheduler | None = None

    async def tick(self) -> None:
        """Each step on its own: one that fails (a statement error, a bug) is logged and the
        others still run, so a failing expiry does not also stop the history from being pruned.
        A store that does not answer ends the tick (every step would fail the same way)."""
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("expiry", self.service.expire_due),
            ("host freshness", self.check_hosts),
            ("preemptions and replacements", lambda: elastic_for(self.service).tick()),
        ]
        history_s = self.history_s
        if history_s is not None:
            steps.append(("history", lambda: self.service.prune_history(history_s)))
        try:
            for name, step in steps:
                try:
                    await step()
                except StoreUnavailableError:
                    raise
                except Exception:
                    log.exception("lease job: %s failed; its other steps went on, the next run tries again", name)
        except StoreUnavailableError as exc:
            STORE_OUTAGES.failure(f"lease job skipped, store unavailable: {exc}")
        except asyncio.CancelledError:
            # The service is stopping (SIGTERM unwinds and cancels every task): each step is one
            # statement the store commits or not, so nothing is half done. Ending quietly keeps
            # apscheduler from logging the cancellation as a failed job with its traceback.
            log.info("lease job stopped by the shutdown; the next start runs it again")

    async def check_hosts(self) -> None:
        now = self.clock()
        rows = await self.service.gw.read("stale_host_names", {"cutoff": now - self.stale_after_s, "limit": 100_000})
        stale = {r["name"] for r in rows}
        if self.stale is not None:
            for host in sorted(stale - self.stale):
                await self.service.events.publish(Event("host.stale", host, "", now))
            for host in sorted(self.stale - stale):
                await self.service.events.publish(Event("host.recovered", host, "", now))
        self.stale = stale

    def start(self) -> None:
        self.scheduler = AsyncIOScheduler()
        self.scheduler.add_job(self.tick, "interval", seconds=self.interval_s, max_instances=1, coalesce=True)
        self.scheduler.start()

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
            self.scheduler = None
