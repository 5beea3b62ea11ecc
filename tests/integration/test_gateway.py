"""The gateway runs only named queries with exactly their declared parameters."""

from __future__ import annotations

import pytest

from graphsvc.store.errors import QueryParameterError, StoreQueryError
from graphsvc.store.gateway import Gateway
from tests.queries import with_test_queries


async def test_missing_and_extra_parameters_refused(gateway: Gateway) -> None:
    with pytest.raises(QueryParameterError, match=r"missing parameters \['hosts'\]"):
        await gateway.read("host_detail", {})
    with pytest.raises(QueryParameterError, match=r"unexpected \['evil'\]"):
        await gateway.read("host_detail", {"hosts": ["x"], "evil": "MATCH (n) DETACH DELETE n"})


async def test_writing_query_cannot_run_as_read(gateway: Gateway) -> None:
    with pytest.raises(QueryParameterError, match="writes"):
        await with_test_queries(gateway).read("reset_graph")


async def test_stats_are_labelled_by_query_name(gateway: Gateway) -> None:
    await gateway.read("health_counts")
    await gateway.read("health_counts")
    assert gateway.stats["health_counts"].calls == 2


async def test_database_errors_are_typed(gateway: Gateway) -> None:
    # A read-only query refused by the server: a typed StoreQueryError naming the query.
    with pytest.raises(StoreQueryError, match="meta_set_version"):
        await gateway.backend.run(
            gateway.registry["meta_set_version"], {"version": 1, "now": 0.0}, write=False, timeout_s=5
        )
