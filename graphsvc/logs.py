"""Logging for the service and the CLI: one line per event worth knowing at INFO.

Two kinds of noise are turned into signal here rather than at every call site:
- the lease keeper's scheduler announces every 5 s tick at INFO: that is DEBUG;
- uvicorn prints a store's start-up refusal (data directory in use, store unreachable) as a
  long traceback: it becomes one line, kept in `startup_error` for the CLI to print.
GraphQL errors are logged once, at their level, by the schema itself
(graphsvc.api.graphql.schema.Schema.process_errors, logger graphsvc.graphql): strawberry's own
logger (strawberry.execution) no longer receives them, so no filter re-levels them here.
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Exceptions that stop the service from starting for a reason the operator can fix.
STARTUP_ERRORS = ("graphsvc.store.errors.", "graphsvc.security.")

startup_error: str | None = None


class StartupFailure(logging.Filter):
    """uvicorn.error: a known start-up failure's traceback becomes `startup_error`, not output."""

    def filter(self, record: logging.LogRecord) -> bool:
        global startup_error
        text = record.getMessage()
        if record.levelno >= logging.ERROR and text.startswith("Traceback"):
            last = text.strip().splitlines()[-1]
            if last.startswith(STARTUP_ERRORS) and ": " in last:
                startup_error = last.split(": ", 1)[1]
                return False
        return not (startup_error is not None and text.startswith("Application startup failed"))


def configure(level: str) -> None:
    """Root handler on stderr, the start-up filter above, and quiet chatty libraries."""
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(level=numeric, format=FORMAT, stream=sys.stderr)
    debug = numeric == logging.DEBUG
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("uvicorn.error").addFilter(StartupFailure())
