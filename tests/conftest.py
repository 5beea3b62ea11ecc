"""Shared fixtures: one suite, both stores.

Every test that takes ``gateway`` (or ``app``/``client``, built on it) runs twice: on the
embedded FalkorDB (the real ``redis-server`` + module the service runs) and on a real Neo4j 5
server. One server of each kind per test session; a fresh graph per test (a new graph name on
FalkorDB; an emptied database on Neo4j Community, which has one user database).

The Neo4j server is, in this order: ``GRAPHSVC_TEST_NEO4J_URI`` (with ``..._USER``/``..._PASSWORD``)
if set; else the project's local server (``tools/neo4j-local``, jars fetched by
``scripts/neo4j-jars.sh``); else a ``neo4j:5`` container where a Docker engine answers. If none
starts, the Neo4j tests FAIL (never skip). ``GRAPHSVC_TEST_STORES=falkordb`` runs one store only,
on purpose (it is never the default, and CI never sets it).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import random
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, settings

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.store.neo4j_backend import Neo4jBackend
from tests.queries import with_test_queries
from tests.stores import NEO4J_TEST_TIMEOUT_S, STORES, Neo4jServer, reset_neo4j, start_neo4j_server

log = logging.getLogger(__name__)

_graph_ids = itertools.count(1)

# Hypothesis judges no example by its wall time (its default deadline is 200 ms, and data that
# takes long to generate fails a health check): these machines are shared, and the suite runs
# in two processes (scripts/test.sh), so a stall says nothing about the code.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

# Store passwords that tests/zz_last configures (and no log line may ever show).
NEO4J_TEST_SECRET = "neo4j-pw-4b1e77c2"
FALKOR_TEST_SECRET = "falkor-pw-93ad01f5"
TEST_SECRETS = (NEO4J_TEST_SECRET, FALKOR_TEST_SECRET)


class LogCapture(logging.Handler):
    """Keeps every log line of the whole test session, for the secrets check that runs last."""

    lines: ClassVar[list[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken log call must not break the tests
            text = str(record.msg)
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.lines.append(f"{record.name}: {text}")

    @classmethod
    def secret_leaks(cls) -> list[str]:
        """The log lines so far (cut to 200 characters) that contain a secret the tests configured:
        the two store passwords of tests/zz_last and each test module's `SECRETS` (the tokens
        that test_authorization, tests/faults/... minted)."""
        secrets = list(TEST_SECRETS)
        for name, module in list(sys.modules.items()):
            if name.startswith("tests.") and isinstance(getattr(module, "SECRETS", None), tuple):
                secrets.extend(module.SECRETS)
        return [line[:200] for line in cls.lines for s in secrets if s in line]


@pytest.fixture(scope="session", autouse=True)
def capture_all_logs() -> Iterator[None]:
    handler = LogCapture(level=logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    previous = root.level
    root.setLevel(min(previous or logging.WARNING, logging.INFO))
    yield
    root.removeHandler(handler)
    root.setLevel(previous)
    # Checked again when the session ends (tests/zz_last checks what its process saw by then):
    # under pytest-xdist each worker has its own session, and its last test may come after it.
    leaks = LogCapture.secret_leaks()
    assert leaks == [], f"log lines with a configured secret: {leaks}"


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(EmbeddedOptions(data_dir=tmp_path_factory.mktemp("falkordb"), appendfsync="no"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jServer]:
    """A real Neo4j 5 server for the whole session; failing to start it fails the tests that need it."""
    server = start_neo4j_server(tmp_path_factory.mktemp("neo4j"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """The store kind a test runs on: 'falkordb' (embedded) or 'neo4j'."""
    kind: str = request.param
    return kind


@pytest.fixture
async def gateway(store: str, request: pytest.FixtureRequest) -> AsyncIterator[Gateway]:
    if store == "neo4j":
        async with neo4j_gateway(request.getfixturevalue("neo4j_server")) as gw:
            yield gw
        return
    embedded_server: EmbeddedFalkorDB = request.getfixturevalue("embedded_server")
    backend = FalkorBackend(
        f"test{next(_graph_ids)}_{os.getpid()}", unix_socket=str(embedded_server.socket_path), kind="embedded"
    )
    await backend.open()
    # The Neo4j fixture's budget, not production's 10 s: CI's shared two cores have timed out a
    # write (a big load, a storm) that takes well under a second on an idle machine.
    gw = Gateway(backend, timeout_s=NEO4J_TEST_TIMEOUT_S)
    await migrate(gw)
    try:
        yield gw
    finally:
        await with_test_queries(gw).write("reset_graph")
        await backend.close()


@pytest.fixture
def app(gateway: Gateway) -> FastAPI:
    return create_app(Settings(insecure_dev=True), gateway=gateway)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing holds now, for a server that cannot bind port 0 and
    say which port it got (slurmctld and slurmd, redis-server's TCP port).

    Why not the port a bind to 0 hands out: the kernel hands out the same ephemeral range to every
    bind to port 0 and every outgoing connection, so between this check and the server's own bind
    any of the suite's other services or clients could take it (a CI run lost a service's port that
    way; those services now bind 0 themselves). Chosen at random below that range instead, where
    only explicit binds like this one land, and checked by binding it."""
    low = _ephemeral_low()
    if low <= 21000:  # no room below the range (e.g. `1024 65535`): the kernel's choice, race and all
        log.warning("the ephemeral port range starts at %d: free_port falls back to a port from it", low)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, low) if low > 21000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            found: int = s.getsockname()[1]
        if found in _HANDED_OUT:  # two calls in a row (slurmctld's and slurmd's) must differ
            continue
        _HANDED_OUT.add(found)
        return found
    raise RuntimeError("no free TCP port found below the ephemeral range in 200 tries")


_HANDED_OUT: set[int] = set()  # ports free_port has returned in this process


REPO = Path(__file__).resolve().parents[1]


@contextlib.asynccontextmanager
async def neo4j_gateway(server: Neo4jServer) -> AsyncIterator[Gateway]:
    """A gateway on `server`, its database emptied and migrated."""
    backend = Neo4jBackend(server.uri, user=server.user, password=server.password)
    await backend.open()
    # A longer budget than production's 10 s: the first run of a big statement includes
    # Neo4j's query planning on a cold JVM, and CI machines are small and shared.
    gw = Gateway(backend, timeout_s=NEO4J_TEST_TIMEOUT_S)
    await reset_neo4j(backend)
    await migrate(gw)
    try:
        yield gw
    finally:
        await backend.close()


@pytest.fixture
async def neo(neo4j_server: Neo4jServer) -> AsyncIterator[tuple[Gateway, Neo4jServer]]:
    """A Neo4j gateway with its server, for tests that hold a transaction open (tests/neo4j_held.py)."""
    async with neo4j_gateway(neo4j_server) as gw:
        yield gw, neo4j_server
