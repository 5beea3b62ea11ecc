"""Logs store outages once, not once per request.

While the store is down every request fails the same way; a log line (or a traceback) for
each one buried the one line that mattered (0.5 MB/s). The first failure is logged, later
ones within `every_s` are only counted, and the count is logged with the next line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class OutageLog:
    def __init__(
        self, logger: logging.Logger, every_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.logger = logger
        self.every_s = every_s
        self.clock = clock
        self.last: float | None = None
        self.suppressed = 0

    def failure(self, what: str) -> bool:
        """Log this failure unless one was logged within every_s; True if it was logged."""
        now = self.clock()
        if self.last is not None and now - self.last < self.every_s:
            self.suppressed += 1
            return False
        more = f" ({self.suppressed} more like it since the last report)" if self.suppressed else ""
        self.logger.error("%s%s", what, more)
        self.last = now
        self.suppressed = 0
        return True


STORE_OUTAGES = OutageLog(logging.getLogger("graphsvc.store.outage"))
