"""Runs the real service as a child process, for tests that stop, kill or restart it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from graphsvc.store.neo4j_local import LocalNeo4j
from tests.stores import neo4j_env


class ServiceProcess:
    """The service as a child process; with ``neo4j``, on that (private) Neo4j server instead of
    the embedded store, which it starts with the service and kills with it in ``kill9``."""

    def __init__(
        self, data_dir: Path, port: int = 0, env: dict[str, str] | None = None, neo4j: LocalNeo4j | None = None
    ) -> None:
        self.data_dir = data_dir
        self.port = port  # 0 until the first start: the service binds a port the kernel picks, then keeps it
        self.env = env or {}
        self.neo4j = neo4j
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 300) -> None:
        """Start it and wait (up to timeout_s; a healthy start returns at once) until it listens and
        /healthz answers: on a loaded two-core machine imports, the store and the migrations took
        over a minute. The first start binds port 0 and reads the port back from the service's
        port file. Why: a port found free beforehand was taken by another test's process before the
        service bound it; the service failed to start, and another service answered /healthz on it.
        A restart binds the same port again (clients keep their URL)."""
        env = {**os.environ, "GRAPHSVC_LOG_LEVEL": "warning", **self.env}
        if self.neo4j is not None:
            if self.neo4j.proc is None:
                self.neo4j.start()
            env.update(neo4j_env(self.neo4j.uri, self.neo4j.password))
        port_file = self.data_dir.parent / f"service-{self.data_dir.name}.port"
        port_file.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "graphsvc.cli",
            "serve",
            "--insecure-dev",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.port),
            "--port-file",
            str(port_file),
        ]
        # Its log to a file, not a pipe nobody reads while it runs: a loaded machine's warnings
        # (slow statements) would fill the pipe and block the service on its next log line.
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            # Each start's lines after a mark of their own, so a tail never shows an earlier run's as this one's.
            log.write(f"==== service start {time.strftime('%H:%M:%S')} ====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + timeout_s
        self.port = port_once_listening(port_file, self.proc, self.log_tail, timeout_s)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"service exited: {self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("service did not become healthy")

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"service-{self.data_dir.name}.log"

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the service's log (stderr), to say why it failed."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, 2) - chars))
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.proc = None
        if self.neo4j is not None:
            self.neo4j.stop()

    def kill9(self) -> None:
        """SIGKILL the service and its store (embedded, or the private Neo4j server), as a crash would."""
        if self.neo4j is not None:
            self.neo4j.kill()
        else:
            store_pid = int((self.data_dir / "falkordb.pid").read_text())
            os.kill(store_pid, signal.SIGKILL)
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None


def port_once_listening(
    port_file: Path, proc: subprocess.Popen[Any], log_tail: Callable[[], str], timeout_s: float = 300
) -> int:
    """The port a `graphsvc serve|demo --port-file F` listens on, read from F once it does (the
    service writes it then); with --port 0 the kernel picked it, so no other process holds it.
    A process that exits first is an error with its log's end."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if port_file.exists():
            return int(port_file.read_text())
        if proc.poll() is not None:
            raise RuntimeError(f"service exited: {log_tail()[-3000:]}")
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"service did not listen in {timeout_s:.0f} s: {log_tail()[-3000:]}")


def private_neo4j(store: str, tmp_path: Path) -> LocalNeo4j | None:
    """A Neo4j server of the test's own (it will be killed), or None for the embedded store."""
    return LocalNeo4j(tmp_path / "neo4j") if store == "neo4j" else None
