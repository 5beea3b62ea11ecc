"""Turns the one ``store`` setting into a running backend behind a gateway."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from graphsvc.ingest.counters import repair_counters
from graphsvc.settings import Settings
from graphsvc.store.backend import Backend
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.store.neo4j_backend import Neo4jBackend
from graphsvc.store.plan_cache import plan_cache_warning, served_statements, sized_plan_cache
from graphsvc.store.supervisor import EmbeddedSupervisor

log = logging.getLogger(__name__)


def store_kind(settings: Settings) -> str:
    if settings.store == "embedded":
        return "embedded"
    scheme = settings.store.split("://", 1)[0]
    return "falkordb" if scheme in {"falkordb", "redis"} else "neo4j"


def build_backend(settings: Settings, embedded: EmbeddedFalkorDB | None) -> Backend:
    kind = store_kind(settings)
    if kind == "embedded":
        assert embedded is not None
        return FalkorBackend(settings.graph, unix_socket=str(embedded.socket_path), kind="embedded")
    if kind == "falkordb":
        url = urlsplit(settings.store)
        password = url.password or settings.falkordb_password.get_secret_value() or None
        return FalkorBackend(settings.graph, host=url.hostname or "127.0.0.1", port=url.port or 6379, password=password)
    return Neo4jBackend(
        settings.store,
        user=settings.neo4j_user,
        password=settings.neo4j_password.get_secret_value(),
        database=settings.neo4j_database,
        plan_allowance_s=settings.neo4j_plan_allowance_s,
    )


@asynccontextmanager
async def open_store(settings: Settings, *, run_migrations: bool = True) -> AsyncIterator[Gateway]:
    """Start (if embedded) and connect the store, bring the graph to GRAPH_VERSION, and clean up."""
    embedded: EmbeddedFalkorDB | None = None
    if store_kind(settings) == "embedded":
        embedded = EmbeddedFalkorDB(
            EmbeddedOptions(
                data_dir=settings.data_dir,
                appendfsync=settings.appendfsync,
                aof_rewrite_min_size=settings.aof_rewrite_min_size,
                aof_rewrite_percentage=settings.aof_rewrite_percentage,
                query_timeout_ms=int(settings.query_timeout_s * 1000),
                max_query_timeout_ms=int(max(settings.query_timeout_s, 60) * 1000),
                plan_cache_size=settings.store_plan_cache or sized_plan_cache(),
                redis_server=settings.redis_server,
                module=settings.falkordb_module,
            )
        )
        await asyncio.to_thread(embedded.start)
    backend = build_backend(settings, embedded)
    supervisor: EmbeddedSupervisor | None = None
    try:
        await backend.open()
        gateway = Gateway(backend, timeout_s=settings.query_timeout_s)
        if isinstance(backend, FalkorBackend) and embedded is None:
            warning = plan_cache_warning(await backend.plan_cache_size(), served_statements(gateway.registry))
            if warning is not None:
                log.warning("%s", warning)
        if run_migrations:
            await migrate(gateway)
            await repair_counters(gateway)
        if embedded is not None:
            supervisor = EmbeddedSupervisor(embedded, interval_s=settings.store_check_interval_s)
            supervisor.start()
        yield gateway
    finally:
        if supervisor is not None:
            await supervisor.stop()
        await backend.close()
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
