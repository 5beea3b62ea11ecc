"""The one owner of the database connection.

Code asks for a query by name with a parameter map; the gateway checks the map
against the parameters the query uses and the types its header declares (and a
declared write is never run as a read), runs it with a time budget, and labels
its log lines and statistics with the query's name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphsvc.store.backend import Backend, Row
from graphsvc.store.errors import QueryParameterError, StoreError, StoreUnavailableError
from graphsvc.store.queries import QueryRegistry, default_registry

log = logging.getLogger("graphsvc.store")


@dataclass
class QueryStat:
    calls: int = 0
    errors: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    rows: int = 0  # rows returned, summed over calls (what a read costs the client to parse)


class Gateway:
    def __init__(
        self,
        backend: Backend,
        registry: QueryRegistry | None = None,
        *,
        timeout_s: float = 10.0,
        slow_query_s: float = 0.5,
    ) -> None:
        self.backend = backend
        self.registry = registry or default_registry()
        self.timeout_s = timeout_s
        self.slow_query_s = slow_query_s
        self.stats: dict[str, QueryStat] = {}
        self.observers: list[Callable[[str, float], None]] = []  # e.g. Prometheus histograms

    @property
    def kind(self) -> str:
        return self.backend.kind

    @property
    def serial_writes(self) -> bool:
        return self.backend.serial_writes

    async def read(self, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        return await self._run(name, params or {}, write=False)

    async def write(self, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        return await self._run(name, params or {}, write=True)

    async def _run(self, name: str, params: Mapping[str, Any], *, write: bool) -> list[Row]:
        query = self.registry[name]
        declared = query.parameters
        given = set(params)
        if given != declared:
            missing, extra = sorted(declared - given), sorted(given - declared)
            raise QueryParameterError(f"query {name!r}: missing parameters {missing}, unexpected {extra}")
        if query.signature is None:
            raise QueryParameterError(f"query {name!r} declares no signature (// @read or // @write)")
        if query.signature.mode == "write" and not write:
            raise QueryParameterError(f"query {name!r} writes; call Gateway.write")
        problems = query.signature.check_params(params)
        if problems:
            raise QueryParameterError(f"query {name!r}: {'; '.join(problems)}")
        stat = self.stats.setdefault(name, QueryStat())
        started = time.perf_counter()
        try:
            rows = await self.backend.run(query, params, write=write, timeout_s=self.timeout_s)
        except StoreError as exc:
            stat.errors += 1
            # An outage fails every query alike: it is reported once (graphsvc.store.outage_log).
            level = logging.DEBUG if isinstance(exc, StoreUnavailableError) else logging.WARNING
            log.log(level, "query=%s failed after %.1f ms: %s", name, _ms(started), exc)
            raise
        finally:
            elapsed = time.perf_counter() - started
            stat.calls += 1
            stat.total_s += elapsed
            stat.max_s = max(stat.max_s, elapsed)
            for observe in self.observers:
                observe(name, elapsed)
        stat.rows += len(rows)
        if elapsed >= self.slow_query_s:  # said as slow: a cold Neo4j's first statements take ~0.5 s each
            log.info("slow query=%s rows=%d %.1f ms (over %g s)", name, len(rows), elapsed * 1000, self.slow_query_s)
        else:
            log.debug("query=%s rows=%d %.1f ms", name, len(rows), elapsed * 1000)
        return rows


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
