"""Queries only the tests run (graph resets, invariant checks), kept out of the production
registry: `with_test_queries(gw)` is a gateway on the same store that knows them too."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import QueryRegistry, default_registry

ROOT = Path(__file__).resolve().parent


@cache
def registry_with_tests() -> QueryRegistry:
    return QueryRegistry(default_registry().root, ROOT)


def with_test_queries(gw: Gateway) -> Gateway:
    """A gateway on the same backend whose registry adds the test-only queries."""
    twin = Gateway(gw.backend, registry_with_tests(), timeout_s=gw.timeout_s, slow_query_s=gw.slow_query_s)
    twin.stats = gw.stats
    return twin
