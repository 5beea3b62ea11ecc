"""The two stores every store test runs on, and how the tests get a real Neo4j 5 server."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphsvc.store.errors import StoreError
from graphsvc.store.neo4j_backend import Neo4jBackend
from graphsvc.store.neo4j_local import LocalNeo4j
from graphsvc.store.queries import NamedQuery, default_registry

STORES: tuple[str, ...] = tuple(
    s.strip() for s in os.environ.get("GRAPHSVC_TEST_STORES", "falkordb,neo4j").split(",") if s.strip()
)

NEO4J_TEST_TIMEOUT_S = 60.0
# The session server keeps each plan it makes (LocalNeo4j.min_replan_interval_s), longer than any
# run of the suite. Every test empties the database and loads a graph of its own, so with Neo4j's
# 10 s a statement run more than 10 s after its last plan found the statistics diverged and was
# planned again: JFR on the two session servers of 185 Neo4j tests found 55-57% of their samples in
# the planner, and with plans kept the same tests took 6:12 instead of 8:30; a fresh-clone CI run,
# 37 instead of 48 minutes of tests (docs/store.md, "The tests' server keeps its plans").
SESSION_MIN_REPLAN_INTERVAL_S = 24 * 3600


@dataclass
class Neo4jServer:
    uri: str
    user: str
    password: str
    stop: Callable[[], None]
    local: LocalNeo4j | None = None


def start_neo4j_server(data_dir: Path) -> Neo4jServer:
    external = os.environ.get("GRAPHSVC_TEST_NEO4J_URI")
    if external:
        return Neo4jServer(
            external,
            os.environ.get("GRAPHSVC_TEST_NEO4J_USER", "neo4j"),
            os.environ.get("GRAPHSVC_TEST_NEO4J_PASSWORD", ""),
            stop=lambda: None,
        )
    local = LocalNeo4j(data_dir, min_replan_interval_s=SESSION_MIN_REPLAN_INTERVAL_S)
    try:
        local.start()
        return Neo4jServer(local.uri, local.user, local.password, stop=local.stop, local=local)
    except StoreError as local_problem:
        container = _container_or_none()
        if container is not None:
            return container
        pytest.fail(f"no Neo4j server for the Neo4j tests: {local_problem}", pytrace=False)


def _container_or_none() -> Neo4jServer | None:
    """A neo4j:5 container through testcontainers, where a Docker engine answers."""
    try:
        import docker

        docker.from_env(timeout=3).ping()  # type: ignore[attr-defined]  # mypy sees the repo's docker/ dir
        from testcontainers.neo4j import Neo4jContainer

        container = Neo4jContainer("neo4j:5.26", password="graphsvc-test")
        container.start()
    except Exception:  # noqa: BLE001 - no engine (or no image): the caller reports the local failure
        return None
    return Neo4jServer(container.get_connection_url(), "neo4j", "graphsvc-test", stop=container.stop)


RESET = NamedQuery("test/reset_neo4j", "MATCH (n) DETACH DELETE n", Path())


async def reset_neo4j(backend: Neo4jBackend) -> None:
    """Empty the one database of Neo4j Community between tests (schema stays: it is the same for all)."""
    await backend.run(RESET, {}, write=True, timeout_s=120)


def adhoc(name: str, text: str) -> NamedQuery:
    """A test-only statement (never in the production registry)."""
    return NamedQuery(f"test/{name}", text, default_registry().root)


def wipe_neo4j(server: Neo4jServer) -> None:
    """Empty the session server's database (synchronously, for module fixtures that start a service on it)."""
    import neo4j

    with neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as driver:
        driver.execute_query("MATCH (n) DETACH DELETE n")


def service_store_env(store: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """Environment for a service child process on this store; on Neo4j, the session server, emptied."""
    if store != "neo4j":
        return {}
    server: Neo4jServer = request.getfixturevalue("neo4j_server")
    wipe_neo4j(server)
    return neo4j_env(server.uri, server.password)


def neo4j_env(uri: str, password: str) -> dict[str, str]:
    return {
        "GRAPHSVC_STORE": uri,
        "GRAPHSVC_NEO4J_USER": "neo4j",
        "GRAPHSVC_NEO4J_PASSWORD": password,
        # The first run of each big statement includes Neo4j's planning on a cold JVM (seconds
        # on a small shared CI machine): the tests give it the same budget as the gateway fixture.
        "GRAPHSVC_QUERY_TIMEOUT_S": str(NEO4J_TEST_TIMEOUT_S),
    }
