"""Neo4j failures become typed store errors by their status code (graphsvc.store.neo4j_backend),
so the API answers each as what it is: a conflict, a timeout, a busy store, or a bug."""

from __future__ import annotations

import pytest
from neo4j import exceptions as neo4j_errors

from graphsvc.store.errors import (
    StoreBusyError,
    StoreConstraintError,
    StoreQueryError,
    StoreTimeoutError,
    StoreUnavailableError,
)
from graphsvc.store.neo4j_backend import map_neo4j_error


def _error(code: str) -> neo4j_errors.Neo4jError:
    return neo4j_errors.Neo4jError._hydrate_neo4j(code=code, message="said the server")


@pytest.mark.parametrize(
    ("code", "ran_s", "expected"),
    [
        ("Neo.ClientError.Schema.ConstraintValidationFailed", 0.1, StoreConstraintError),
        ("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration", 10.0, StoreTimeoutError),
        ("Neo.TransientError.Transaction.LockAcquisitionTimeout", 10.0, StoreTimeoutError),
        # Terminated while waiting for a lock, or while running: a timeout once its budget ran out ...
        ("Neo.TransientError.Transaction.LockClientStopped", 10.0, StoreTimeoutError),
        ("Neo.TransientError.Transaction.Terminated", 10.2, StoreTimeoutError),
        # ... and sooner, an operator's TERMINATE or a database stopping: a busy store, retry later.
        ("Neo.TransientError.Transaction.LockClientStopped", 3.0, StoreBusyError),
        ("Neo.TransientError.Transaction.Terminated", 0.5, StoreBusyError),
        ("Neo.TransientError.Transaction.DeadlockDetected", 5.0, StoreBusyError),
        ("Neo.ClientError.Statement.SyntaxError", 0.1, StoreQueryError),
    ],
)
def test_codes_map_to_typed_errors(code: str, ran_s: float, expected: type[Exception]) -> None:
    mapped = map_neo4j_error("q", _error(code), ran_s=ran_s, budget_s=10.0)
    assert type(mapped) is expected, mapped


def test_the_driver_reports_terminations_as_client_errors() -> None:
    """Why the codes are matched in both forms: the driver rewrites these two transient codes."""
    for code in ("Neo.TransientError.Transaction.LockClientStopped", "Neo.TransientError.Transaction.Terminated"):
        err = _error(code)
        assert isinstance(err, neo4j_errors.ClientError)
        assert err.code == code.replace("TransientError", "ClientError")


def test_an_unreachable_server_is_unavailable_not_busy() -> None:
    mapped = map_neo4j_error("q", neo4j_errors.ServiceUnavailable("no route"))  # type: ignore[no-untyped-call]
    assert isinstance(mapped, StoreUnavailableError) and not isinstance(mapped, StoreBusyError)
