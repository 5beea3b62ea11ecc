"""Runs the real service as a child process, for tests that stop, kill or restart it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


class ServiceProcess:
    def __init__(self, data_dir: Path, port: int, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = port
        self.env = env or {}
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60) -> None:
        env = {**os.environ, "GRAPHSVC_LOG_LEVEL": "warning", **self.env}
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
        ]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"service exited: {err[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("service did not become healthy")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None

    def kill9(self) -> None:
        """SIGKILL the service and its embedded store, as a crash would."""
        store_pid = int((self.data_dir / "falkordb.pid").read_text())
        os.kill(store_pid, signal.SIGKILL)
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None
