"""Shared fixtures: one real embedded FalkorDB per test session, one fresh graph per test.

A graph per test (not a server per test) keeps tests isolated and fast; the
server is the real ``redis-server`` + FalkorDB module the service itself runs.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from fastapi import FastAPI

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate

_graph_ids = itertools.count(1)


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


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(EmbeddedOptions(data_dir=tmp_path_factory.mktemp("falkordb"), appendfsync="no"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def gateway(embedded_server: EmbeddedFalkorDB) -> AsyncIterator[Gateway]:
    backend = FalkorBackend(
        f"test{next(_graph_ids)}_{os.getpid()}", unix_socket=str(embedded_server.socket_path), kind="embedded"
    )
    await backend.open()
    gw = Gateway(backend)
    await migrate(gw)
    try:
        yield gw
    finally:
        await gw.write("reset_graph")
        await backend.close()


@pytest.fixture
def app(gateway: Gateway) -> FastAPI:
    return create_app(Settings(insecure_dev=True), gateway=gateway)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


REPO = Path(__file__).resolve().parents[1]
