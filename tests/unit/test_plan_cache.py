"""FalkorDB's plan cache sized from the named statements (graphsvc/store/plan_cache.py)."""

from __future__ import annotations

import pytest

from graphsvc.store.plan_cache import (
    FALKORDB_DEFAULT,
    HEADROOM,
    plan_cache_size,
    plan_cache_warning,
    served_statements,
    sized_plan_cache,
)
from graphsvc.store.queries import default_registry


@pytest.mark.parametrize(
    ("statements", "size"),
    [(0, FALKORDB_DEFAULT), (9, FALKORDB_DEFAULT), (10, 10 + HEADROOM), (111, 111 + HEADROOM)],
)
def test_size_is_every_statement_and_headroom_never_below_falkordbs_own(statements: int, size: int) -> None:
    assert plan_cache_size(statements) == size


@pytest.mark.parametrize(
    ("configured", "statements", "warns"),
    [(None, 111, False), (25, 111, True), (110, 111, True), (111, 111, False), (500, 111, False)],
)
def test_a_smaller_cache_than_the_statements_is_warned_with_the_size_to_set(
    configured: int | None, statements: int, warns: bool
) -> None:
    warning = plan_cache_warning(configured, statements)
    assert (warning is not None) == warns
    if warning is not None:
        assert f"CACHE_SIZE {plan_cache_size(statements)}" in warning and str(configured) in warning


def test_served_statements_are_the_named_queries_but_the_migrations() -> None:
    registry = default_registry()
    names = registry.names()
    migrations = [n for n in names if n.startswith("migrations/")]
    assert migrations, "the registry has migrations"
    assert served_statements(registry) == len(names) - len(migrations)
    assert sized_plan_cache() == plan_cache_size(served_statements(registry))
    assert sized_plan_cache() > FALKORDB_DEFAULT  # the point: the service runs more than 25
