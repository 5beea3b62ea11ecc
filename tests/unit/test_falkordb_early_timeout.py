"""FalkorDB's "Query timed out" well inside the budget: a read is asked once more with what is
left of the budget; a write, and a read that used its budget, fail as they are."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from graphsvc.store.backend import Row
from graphsvc.store.errors import StoreTimeoutError
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.queries import NamedQuery
from tests.stores import adhoc


class TimesOut(FalkorBackend):
    """Says "timed out" after `after_s` for the first `failures` statements, then answers."""

    def __init__(self, failures: int, after_s: float) -> None:
        super().__init__("early_timeout", unix_socket="/nonexistent")
        self.failures, self.after_s = failures, after_s
        self.budgets: list[float] = []
        self.queue_waits: list[float | None] = []

    async def _run_once(self, query: NamedQuery, params: Mapping[str, Any], **options: Any) -> list[Row]:
        self.budgets.append(options["timeout_s"])
        self.queue_waits.append(options.get("queue_wait_s"))
        if len(self.budgets) <= self.failures:
            await asyncio.sleep(self.after_s)
            raise StoreTimeoutError(query.name, "Query timed out")
        return [{"n": 1}]


QUERY = adhoc("q", "RETURN 1 AS n")


async def test_an_early_timeout_of_a_read_is_asked_again_with_the_budget_left() -> None:
    backend = TimesOut(failures=1, after_s=0.0)
    assert await backend.run(QUERY, {}, write=False, timeout_s=100.0) == [{"n": 1}]
    assert len(backend.budgets) == 2 and backend.budgets[0] == 100.0 and 50.0 <= backend.budgets[1] <= 100.0
    # The retry waits for a connection no longer than its budget (the first, the store's queue timeout).
    assert backend.queue_waits == [None, backend.budgets[1]]


@pytest.mark.parametrize(
    ("failures", "after_s", "write", "budget_s"),
    [(2, 0.0, False, 100.0), (1, 0.0, True, 100.0), (1, 0.06, False, 0.1)],
    ids=["asked-once-only", "a-write", "the-budget-used"],
)
async def test_what_is_not_asked_again(failures: int, after_s: float, write: bool, budget_s: float) -> None:
    backend = TimesOut(failures=failures, after_s=after_s)
    with pytest.raises(StoreTimeoutError):
        await backend.run(QUERY, {}, write=write, timeout_s=budget_s)
    assert len(backend.budgets) == (2 if failures == 2 else 1)
