"""kill -9 of the service and its store mid-ingest loses no acknowledged write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.synthetic.clusters import build
from tests.conftest import free_port

pytestmark = pytest.mark.slow


def start_service(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GRAPHSVC_LOG_LEVEL": "warning"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphsvc.cli", "serve", "--data-dir", str(data_dir), "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"service exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("service did not become healthy")


def test_kill_9_keeps_every_acknowledged_ingest(tmp_path: Path) -> None:
    cluster = build("superpod-h100:sus=2")
    data_dir, port = tmp_path / "data", free_port()
    service = start_service(data_dir, port)
    acked: list[str] = []
    stop = threading.Event()

    def pump() -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            for host in cluster.hosts:
                if stop.is_set():
                    return
                try:
                    resp = client.put(
                        f"/v1/hosts/{host.hostname}/facts",
                        content=host.model_dump_json(),
                        headers={"content-type": "application/json"},
                    )
                except httpx.HTTPError:
                    return
                if resp.status_code == 200:
                    acked.append(host.hostname)

    threads = [threading.Thread(target=pump) for _ in range(1)]
    for t in threads:
        t.start()
    while len(acked) < 20:
        time.sleep(0.005)
    store_pid = int((data_dir / "falkordb.pid").read_text())
    os.kill(store_pid, signal.SIGKILL)
    os.kill(service.pid, signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join()
    service.wait()
    assert len(acked) >= 20

    service = start_service(data_dir, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            by_name = {h.hostname: h for h in cluster.hosts}
            for name in acked:
                body = client.get(f"/v1/hosts/{name}").json()
                assert [g["uuid"] for g in body["gpus"]] == [g.uuid for g in by_name[name].gpus], name
                assert len(body["nics"]) == 8
            health = client.get("/healthz").json()
            # nothing half-written: every stored host has all 8 GPUs
            assert health["gpus"] == 8 * health["hosts"]
            assert health["hosts"] >= len(acked)
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
