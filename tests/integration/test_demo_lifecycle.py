"""`graphsvc demo` over time: its hosts stay fresh while it runs (it refreshes their facts as
collectors would), and on SIGTERM it stops its local Neo4j server instead of orphaning it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.slow

STALE_AFTER_S = 6.0  # the demo refreshes every 2 s: 4 s of slack on a loaded machine


def start_demo(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    port = free_port()
    log = (tmp_path / "demo.log").open("wb")  # a file: nobody reads a pipe while it runs
    proc = subprocess.Popen(
        [exe, "demo", "--profile", "dgx1", "--port", str(port), "--data-dir", str(tmp_path / "data"), *args],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}"


def loaded(proc: subprocess.Popen[bytes], url: str, tmp_path: Path, polls: int = 1200) -> dict[str, Any]:
    """/healthz once the demo's two hosts are in (up to ~5 min of polls: a cold JVM is slow)."""
    for _ in range(polls):
        assert proc.poll() is None, (tmp_path / "demo.log").read_text()
        try:
            health: dict[str, Any] = httpx.get(f"{url}/healthz", timeout=2).json()
        except httpx.HTTPError:
            health = {}
        if health.get("hosts") == 2 and "ready at" in (tmp_path / "demo.log").read_text():
            return health
        time.sleep(0.25)
    raise AssertionError("the demo did not load: " + (tmp_path / "demo.log").read_text()[-2000:])


def test_the_demo_keeps_its_hosts_fresh(tmp_path: Path) -> None:
    proc, url = start_demo(tmp_path, env={"GRAPHSVC_STALE_AFTER_S": str(STALE_AFTER_S)})
    try:
        loaded(proc, url, tmp_path)
        seen: list[int] = []
        start = time.monotonic()
        while time.monotonic() - start < 2.5 * STALE_AFTER_S:  # well past the stale limit
            seen.append(httpx.get(f"{url}/healthz", timeout=30).json()["stale_hosts"])
            time.sleep(0.5)
        assert seen and set(seen) == {0}, seen
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    text = (tmp_path / "demo.log").read_text()
    assert "refreshing" in text and "Traceback" not in text


def neo4j_pids(data_dir: Path) -> list[int]:
    """The local Neo4j launchers keeping their data under data_dir (whoever their parent is now)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"Neo4jLocal" in cmdline and str(data_dir).encode() in cmdline and state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not shutil.which("java"), reason="the local Neo4j needs java")
def test_sigterm_stops_the_demos_local_neo4j(tmp_path: Path) -> None:
    proc, url = start_demo(tmp_path, "--store", "neo4j")
    data_dir = tmp_path / "data" / "neo4j"
    try:
        loaded(proc, url, tmp_path)
        assert len(neo4j_pids(data_dir)) == 1
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        for _ in range(600):  # up to ~60 s: the JVM closes the database before it exits
            if not neo4j_pids(data_dir):
                break
            time.sleep(0.1)
        assert not neo4j_pids(data_dir), "the local Neo4j outlived the demo"
        text = (tmp_path / "demo.log").read_text()
        assert "Traceback" not in text
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in neo4j_pids(data_dir):
            os.kill(pid, signal.SIGKILL)
