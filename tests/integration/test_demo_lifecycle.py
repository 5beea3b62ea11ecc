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

from tests.service import port_once_listening

pytestmark = pytest.mark.slow

# The demo refreshes every third of this: every 10 s. The test watches refreshes land rather than
# the clock run past this limit: at 6 s (a refresh every 2 s), a refresh 4 s late on a loaded
# machine made a host stale and the test fail; here one would have to be 20 s late. At 60 s the
# three refreshes it waited for took a minute of the suite.
STALE_AFTER_S = 30.0
REFRESHES = 2  # each host's facts seen arriving again this many times: again and again, not once


def start_demo(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    log, port_file = (tmp_path / "demo.log").open("wb"), tmp_path / "demo.port"  # a file: nobody reads a pipe
    proc = subprocess.Popen(
        [exe, "demo", "--profile", "dgx1", "--port", "0", "--port-file", str(port_file),
         "--data-dir", str(tmp_path / "data"), *args],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )  # fmt: skip
    port = port_once_listening(port_file, proc, (tmp_path / "demo.log").read_text)
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
    """Each host's facts arrive again and again (its age drops back, twice), and no host is ever
    stale: the demo refreshes them as collectors would (bounded polls, not a clock)."""
    proc, url = start_demo(tmp_path, env={"GRAPHSVC_STALE_AFTER_S": str(STALE_AFTER_S)})
    query = {"query": "{ hosts { nodes { name ageSeconds stale } } }"}
    try:
        loaded(proc, url, tmp_path)
        last: dict[str, float] = {}
        refreshed: dict[str, int] = {}
        for _ in range(1200):  # ~5 min at most; about 20 s when refreshes land every 10 s
            nodes = httpx.post(f"{url}/graphql", json=query, timeout=30).json()["data"]["hosts"]["nodes"]
            assert len(nodes) == 2 and not any(n["stale"] for n in nodes), nodes
            for n in nodes:
                if n["name"] in last and n["ageSeconds"] < last[n["name"]]:
                    refreshed[n["name"]] = refreshed.get(n["name"], 0) + 1
                last[n["name"]] = n["ageSeconds"]
            if len(refreshed) == 2 and min(refreshed.values()) >= REFRESHES:
                break
            time.sleep(0.25)
        assert len(refreshed) == 2 and min(refreshed.values()) >= REFRESHES, refreshed
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
    # The demo's own budget (10 s): a cold Neo4j plans the large ingest_host in 3 s on a quiet 2-core
    # machine, 8-9 s with both cores busy and 11 s in one CI run, past the budget, and the loader
    # stopped at the 500 that was. The first run of a plan now gets the plan allowance
    # (graphsvc.store.neo4j_backend; tests/integration/test_neo4j_plan_budget.py).
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
