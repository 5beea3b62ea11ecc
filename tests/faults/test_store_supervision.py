"""#13.3: the embedded redis-server is supervised; its outage is a typed error, logged once.

Before: after a `kill -9` of the redis-server child, /healthz answered 503 until the whole
service was restarted, GraphQL answered "Unexpected error." with HTTP 200, and every
request logged a traceback. These tests are specifically about the embedded store, so they
run their own (not the session's shared server).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.store.supervisor import EmbeddedSupervisor
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load
from tests.service import port_once_listening

SUMMARY = {"query": "{ clusterSummary { hosts } }"}


class Store:
    def __init__(self, embedded: EmbeddedFalkorDB, gateway: Gateway, supervisor: EmbeddedSupervisor) -> None:
        self.embedded = embedded
        self.gateway = gateway
        self.supervisor = supervisor

    def kill9(self) -> int:
        pid = self.embedded.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert self.embedded._proc is not None
        self.embedded._proc.wait()  # dead (not yet noticed by the supervisor)
        return pid


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    embedded = EmbeddedFalkorDB(EmbeddedOptions(data_dir=tmp_path / "data", appendfsync="always"))
    embedded.start()
    backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
    await backend.open()
    gateway = Gateway(backend)
    await migrate(gateway)
    # A check interval of an hour: the test decides when the supervisor looks (check_once).
    supervisor = EmbeddedSupervisor(embedded, interval_s=3600)
    supervisor.start()
    try:
        yield Store(embedded, gateway, supervisor)
    finally:
        await supervisor.stop()
        await backend.close()
        embedded.stop()


async def test_outage_is_typed_then_the_store_comes_back(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    await load(store.gateway, "l40s:hosts=2")
    app = create_app(Settings(insecure_dev=True), gateway=store.gateway)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        assert (await c.post("/graphql", json=SUMMARY)).json()["data"]["clusterSummary"]["hosts"] == 2
        old_pid = store.kill9()
        caplog.clear()
        for _ in range(20):
            resp = await c.post("/graphql", json=SUMMARY)
            assert resp.status_code == 200
            [error] = resp.json()["errors"]
            assert error["extensions"]["code"] == "STORE_UNAVAILABLE", error
            assert error["message"] == "the graph store is unavailable; retry later"
            rest = await c.get("/v1/hosts/l40s-001")
            assert rest.status_code == 503, rest.text
            assert (await c.get("/healthz")).status_code == 503
        graphsvc_records = [r for r in caplog.records if r.name.startswith("graphsvc") and r.levelno >= logging.ERROR]
        assert all(r.exc_info is None for r in graphsvc_records)  # no traceback
        assert len(graphsvc_records) <= 1  # one line for the outage, not one per request

        assert await store.supervisor.check_once() is True
        assert store.embedded.pid != old_pid
        assert store.supervisor.restarts == 1
        body = (await c.post("/graphql", json=SUMMARY)).json()
        assert body.get("errors") is None, body
        assert body["data"]["clusterSummary"]["hosts"] == 2  # every acknowledged write is back
        assert (await c.get("/healthz")).status_code == 200
    messages = [r.getMessage() for r in caplog.records if r.name == "graphsvc.store.supervisor"]
    assert len(messages) == 2, messages
    assert "killed by signal 9" in messages[0] and "back up" in messages[1]


async def test_a_live_store_is_left_alone(store: Store) -> None:
    assert await store.supervisor.check_once() is False
    assert store.supervisor.restarts == 0


async def test_failed_restarts_back_off(store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A restart that cannot work (the binary is gone) is retried, further apart each time."""
    store.supervisor.first_backoff_s = 0.1
    store.supervisor.max_backoff_s = 0.4
    store.kill9()
    store.embedded.opts.redis_server = str(tmp_path / "no-such-redis-server")
    task = asyncio.ensure_future(store.supervisor.check_once())
    for _ in range(10_000):
        failures = [r for r in caplog.records if "restart failed" in r.getMessage()]
        if len(failures) >= 4:
            break
        await asyncio.sleep(0.01)
    assert len(failures) >= 4
    assert [f.getMessage().rsplit("next try in ", 1)[1] for f in failures[:4]] == ["0.1 s", "0.2 s", "0.4 s", "0.4 s"]
    assert "redis-server not found" in failures[0].getMessage()
    assert store.supervisor.state == "down"
    store.embedded.opts.redis_server = None  # the binary is back
    assert await task is True
    assert store.supervisor.state == "up"


@pytest.mark.slow
def test_kill9_of_the_store_under_a_running_service(tmp_path: Path) -> None:
    """The real service: kill -9 its redis-server; it comes back by itself and answers."""
    data, port_file = tmp_path / "data", tmp_path / "service.port"
    log_path = tmp_path / "service.log"
    cmd = [sys.executable, "-m", "graphsvc.cli", "--log-level", "warning", "serve", "--insecure-dev",
           "--data-dir", str(data), "--port", "0", "--port-file", str(port_file)]  # fmt: skip
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        url = f"http://127.0.0.1:{port_once_listening(port_file, proc, log_path.read_text)}"
        with httpx.Client(base_url=url, timeout=30) as c:
            wait_until(lambda: _status(c, "/healthz") == 200, proc)
            cluster = build("l40s:hosts=3")
            for host in cluster.hosts:
                resp = c.put(f"/v1/hosts/{host.hostname}/facts", content=host.model_dump_json(),
                             headers={"content-type": "application/json"})  # fmt: skip
                assert resp.status_code == 200, resp.text
            old_pid = int((data / "falkordb.pid").read_text())
            os.kill(old_pid, signal.SIGKILL)
            killed_at = time.monotonic()
            answers: list[Any] = []

            def answered() -> bool:
                resp = c.post("/graphql", json=SUMMARY)
                assert resp.status_code == 200, resp.text  # never a 5xx from GraphQL
                body = resp.json()
                answers.append(body)
                if body.get("errors"):
                    assert body["errors"][0]["extensions"]["code"] == "STORE_UNAVAILABLE", body
                    return False
                return bool(body["data"]["clusterSummary"]["hosts"] == 3)

            wait_until(answered, proc)
            outage_s = time.monotonic() - killed_at
            assert int((data / "falkordb.pid").read_text()) != old_pid
            assert _status(c, "/healthz") == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    log_text = log_path.read_text()
    assert "Traceback" not in log_text, log_text[-3000:]
    assert "killed by signal 9" in log_text and "back up" in log_text, log_text[-3000:]
    # One line per 30 s of outage (graphsvc.store.outage_log), however long a loaded machine took to
    # restart the store, and one more for the report that it ended: never one per request.
    assert log_text.count("store unavailable") <= 2 + int(outage_s // 30), (outage_s, log_text[-3000:])


def _status(c: httpx.Client, path: str) -> int:
    try:
        return c.get(path).status_code
    except httpx.HTTPError:
        return 0


def wait_until(done: Any, proc: subprocess.Popen[bytes], attempts: int = 3000) -> None:
    """Bounded by attempts, not by a deadline: a loaded machine only makes it take longer."""
    for _ in range(attempts):
        assert proc.poll() is None, "the service exited"
        if done():
            return
        time.sleep(0.05)
    raise AssertionError("the condition never held")
