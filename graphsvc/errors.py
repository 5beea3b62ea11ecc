"""The domain's error model: what can go wrong, by kind, with no transport detail.

Services raise (or return, where a failure is an expected answer) these; each transport maps
the kind once: REST to an HTTP status (`graphsvc.api.errors.STATUS`), GraphQL to a typed
result implementing the `Error` interface or, for the store's outages, an error whose
`extensions.code` names the kind (`graphsvc.api.graphql.store_errors`).

The store's own errors subclass these (`graphsvc.store.errors`), so a transport can tell an
outage from a bug without importing the store.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from graphsvc.store.outage_log import STORE_OUTAGES


class ErrorKind(StrEnum):
    INVALID = "invalid"  # the caller's input is wrong; the same input will fail again
    NOT_FOUND = "not_found"  # what the input names does not exist
    CONFLICT = "conflict"  # the input is fine but contradicts the graph (or a concurrent change)
    UNAVAILABLE = "unavailable"  # the store cannot be reached; retry later
    TIMEOUT = "timeout"  # the store stopped a query that ran too long; retry later


# What a caller is told about an outage, whatever the transport.
UNAVAILABLE = "the graph store is unavailable; retry later"
TIMED_OUT = "the graph store timed out; retry later"


class DomainError(Exception):
    """Base of every failure the domain expects."""

    kind: ErrorKind = ErrorKind.INVALID

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.message = str(args[0]) if args else ""


class InvalidInput(DomainError):
    kind = ErrorKind.INVALID


class Unavailable(DomainError):
    kind = ErrorKind.UNAVAILABLE


class TimedOut(DomainError):
    kind = ErrorKind.TIMEOUT


class Rejected(DomainError):
    """Input rejected with the field at fault (and, for conflicts, what it conflicts with)."""

    def __init__(self, kind: ErrorKind, field: str, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field
        self.detail = detail


def report_outage(exc: BaseException) -> None:
    """Log a store outage once per interval, however many requests it fails."""
    STORE_OUTAGES.failure(f"store unavailable: {exc}")
