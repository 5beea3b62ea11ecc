"""Logging for the service and the CLI: one line per event worth knowing at INFO.

Three kinds of noise are turned into signal here rather than at every call site:
- the lease keeper's scheduler announces every 5 s tick at INFO: that is DEBUG;
- strawberry logs every GraphQL error at ERROR with a stack, including a client's typo: a
  client's mistake is INFO (a refusal such as FORBIDDEN is WARNING), and only errors with an
  unexpected original exception stay ERROR;
- uvicorn prints a store's start-up refusal (data directory in use, store unreachable) as a
  long traceback: it becomes one line, kept in `startup_error` for the CLI to print.
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Refusals the API means to make (they carry an exception but are no bug).
REFUSALS = {"Forbidden", "RateLimited", "UnrepresentableParameter"}
# Exceptions that stop the service from starting for a reason the operator can fix.
STARTUP_ERRORS = ("graphsvc.store.errors.", "graphsvc.security.")

startup_error: str | None = None


class ClientMistakes(logging.Filter):
    """strawberry.execution: client mistakes at INFO, refusals at WARNING, bugs stay ERROR."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            _relevel(record, logging.INFO)
            first_line = str(getattr(record.msg, "message", record.getMessage())).splitlines()[0]
            record.msg = f"graphql: client error: {first_line}"
            record.args = ()
            record.stack_info = None
        elif type(exc).__name__ in REFUSALS:
            _relevel(record, logging.WARNING)
            record.msg = f"graphql: refused: {record.getMessage()}"
            record.args = ()
            record.exc_info = None
            record.stack_info = None
        return record.levelno >= logging.getLogger().getEffectiveLevel()


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


def _relevel(record: logging.LogRecord, level: int) -> None:
    record.levelno = level
    record.levelname = logging.getLevelName(level)


def configure(level: str) -> None:
    """Root handler on stderr, the filters above, and quiet chatty libraries."""
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(level=numeric, format=FORMAT, stream=sys.stderr)
    debug = numeric == logging.DEBUG
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("strawberry.execution").addFilter(ClientMistakes())
    logging.getLogger("uvicorn.error").addFilter(StartupFailure())
