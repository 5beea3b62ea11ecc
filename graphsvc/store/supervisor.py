"""Keeps the embedded redis-server running: restarts it with backoff if it dies.

Without it, a redis-server killed by the OOM killer (or anyone's `kill -9`) left the
service answering 503 until someone restarted the whole service. The supervisor notices the
exit within `interval_s`, restarts the server on the same data directory (the append-only
file brings back every acknowledged write; the client pool reconnects on its next command)
and, if a start fails, tries again after 0.5 s, 1 s, 2 s, ... up to `max_backoff_s`.

It logs one line per change of state (down, back up, a failed attempt), never one per
request: requests during the outage get a typed "store unavailable" answer instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from graphsvc.store.embedded import EmbeddedFalkorDB
from graphsvc.store.errors import EmbeddedStoreError

log = logging.getLogger(__name__)


class EmbeddedSupervisor:
    def __init__(
        self,
        embedded: EmbeddedFalkorDB,
        *,
        interval_s: float = 0.5,
        first_backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ) -> None:
        self.embedded = embedded
        self.interval_s = interval_s
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self.restarts = 0
        self.state = "up"
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="embedded-store-supervisor")

    async def stop(self) -> None:
        self._stop.set()
        self.embedded.request_stop()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        while not self._stop.is_set():
            await self.check_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.interval_s)

    async def check_once(self) -> bool:
        """If the server died, restart it (retrying with backoff); True if it had to."""
        code = self.embedded.exit_code()
        if code is None:
            return False
        pid = self.embedded.pid
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        self.state = "down"
        log.error("embedded store: redis-server (pid %s) %s; restarting it", pid, how)
        down_at = time.monotonic()
        delay = self.first_backoff_s
        while not self._stop.is_set():
            try:
                await asyncio.to_thread(self.embedded.restart)
            except EmbeddedStoreError as exc:
                if self._stop.is_set():
                    break
                first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log.error("embedded store: restart failed (%s); next try in %.1f s", first_line, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
                delay = min(delay * 2, self.max_backoff_s)
                continue
            self.restarts += 1
            self.state = "up"
            log.warning(
                "embedded store: back up (pid %s) after %.1f s down", self.embedded.pid, time.monotonic() - down_at
            )
            break
        return True
