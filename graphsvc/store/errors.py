"""The store's error tree: callers tell transient from permanent failures by type."""

from __future__ import annotations

from graphsvc.errors import InvalidInput, TimedOut, Unavailable


class StoreError(Exception):
    """Base of every failure the store gateway raises."""


class StoreUnavailableError(StoreError, Unavailable):
    """The database cannot be reached or would not start; retrying later may help."""


class EmbeddedStoreError(StoreUnavailableError):
    """The embedded FalkorDB server is missing, will not start, or its data dir is in use."""


class StoreQueryError(StoreError):
    """The database rejected a named query (a bug or a constraint violation, not transient)."""

    def __init__(self, query: str, message: str) -> None:
        super().__init__(f"query {query!r} failed: {message}")
        self.query = query
        self.message = message


class UnrepresentableParameter(StoreQueryError, InvalidInput):
    """A parameter the store cannot carry (FalkorDB's query text cannot hold a NUL character).

    Nothing stored can contain one (ingest rejects control characters), so the caller's
    input is at fault: surface it as bad input, not as a failure of the service.
    """


class StoreConstraintError(StoreQueryError):
    """A write broke a unique constraint (two writers raced for one key, e.g. an idempotency key).

    Recognised by the database's error code (Neo4j's Neo.ClientError.Schema.ConstraintValidationFailed)
    or, on FalkorDB, which has no codes, by its constraint-violation reply.
    """


class StoreBusyError(StoreUnavailableError):
    """The database kept answering with transient failures (deadlocks, lock waits) after bounded retries."""


class StoreTimeoutError(StoreQueryError, TimedOut):
    """A query ran past its time budget and was stopped by the database."""


class QueryParameterError(StoreError):
    """Code called a named query with parameters it does not declare, or without ones it needs."""


class StoreVersionError(StoreError):
    """The database server is older than the Cypher this service runs (refused at startup)."""


class GraphVersionError(StoreError):
    """The stored graph is newer than this code understands; refuse rather than corrupt it."""
