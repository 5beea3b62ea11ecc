"""`LocalNeo4j` against a stand-in launcher (a fake `java` on PATH): a launcher that exits
without its ready line is an error naming why (not "ready"), and the launcher dies with the
process that started it, even one killed outright (SIGKILL leaves no `finally` to run)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphsvc.store.errors import StoreUnavailableError
from graphsvc.store.neo4j_local import LocalNeo4j

# What the real launcher prints on a data directory another server holds (abridged).
LOCKED = """\
Exception in thread "main" java.lang.RuntimeException: Error starting Neo4j database server at DATA/databases
\tat org.neo4j.graphdb.facade.DatabaseManagementServiceFactory.startDatabaseServer(Factory.java:288)
\tat Neo4jLocal.main(Neo4jLocal.java:76)
Caused by: org.neo4j.io.locker.FileLockException: Lock file has been locked by another process: DATA/store_lock
\tat org.neo4j.io.locker.Locker.storeLockException(Locker.java:151)
\t... 7 more"""

FAKE_JAVA = f"""#!{sys.executable}
import os, sys, time
mode = os.environ["FAKE_NEO4J"]
port = sys.argv[sys.argv.index("--port") + 1]
port = "17687" if port == "0" and mode != "old" else port  # as the real one: the port picked for 0
if mode == "locked":
    print({LOCKED!r}, flush=True)
    sys.exit(1)
if mode == "failed":
    print("NEO4J FAILED the password could not be set", flush=True)
    sys.exit(1)
print("NEO4J READY bolt://127.0.0.1:" + port, flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def fake_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A launcher home (jars and class present, empty) and a fake `java` first on PATH."""
    home = tmp_path / "neo4j-local"
    (home / "lib").mkdir(parents=True)
    (home / "classes").mkdir()
    (home / "lib" / "neo4j-5.26.0.jar").touch()
    (home / "classes" / "Neo4jLocal.class").touch()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text(FAKE_JAVA)
    java.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GRAPHSVC_NEO4J_LOCAL", str(home))
    return home


def gone(pid: int) -> bool:
    """No such process, or only its zombie (whoever adopted it may not reap at once)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, polls: int = 600) -> bool:
    for _ in range(polls):  # up to ~60 s: a loaded machine, but a bounded wait
        if gone(pid):
            return True
        time.sleep(0.1)
    return False


def test_a_launcher_that_exits_without_its_ready_line_is_an_error(
    fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEO4J", "locked")
    server = LocalNeo4j(tmp_path / "data")
    with pytest.raises(StoreUnavailableError) as raised:
        server.start(timeout_s=60)
    message = str(raised.value)
    assert message.startswith("local Neo4j exited before it was ready (exit status 1): ")
    assert "Lock file has been locked by another process" in message and "\n" not in message
    assert server.proc is None


def test_a_failed_line_is_one_line_too(fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NEO4J", "failed")
    with pytest.raises(StoreUnavailableError, match=r"^local Neo4j failed: the password could not be set$"):
        LocalNeo4j(tmp_path / "data").start(timeout_s=60)


def test_a_launcher_that_names_no_port_is_an_error(
    fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEO4J", "old")  # built before it said which port it bound: READY ...:0
    server = LocalNeo4j(tmp_path / "data")
    with pytest.raises(StoreUnavailableError, match=r"^local Neo4j named no port it listens on .*neo4j-jars.sh$"):
        server.start(timeout_s=60)
    assert server.proc is None


def test_ready_then_stopped(fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NEO4J", "ready")
    server = LocalNeo4j(tmp_path / "data")
    server.start(timeout_s=60)
    assert server.proc is not None
    assert server.uri == "bolt://127.0.0.1:17687"  # the port its ready line names (it was asked for 0)
    pid = server.proc.pid
    assert "Neo4jLocal" in Path(f"/proc/{pid}/cmdline").read_text()  # the launcher itself, no wrapper left
    server.stop(timeout_s=30)
    assert gone(pid)


@pytest.mark.parametrize(
    ("files", "classpath", "archived"),
    [
        # scripts/neo4j-jars.sh's layout: the launcher jarred beside the Neo4j jars, and the class archive.
        (["lib/neo4j-local-launcher.jar", "lib/neo4j-local.jsa"], "lib/*", True),
        (["lib/neo4j-local-launcher.jar"], "lib/*", False),  # the archive could not be written
        (["classes/Neo4jLocal.class"], "classes:lib/*", False),  # a launcher built before the jar
    ],
)
def test_the_class_archive_is_mapped_where_there_is_one(
    fake_launcher: Path, tmp_path: Path, files: list[str], classpath: str, archived: bool
) -> None:
    home = fake_launcher  # its classes/Neo4jLocal.class is used only where lib/ holds no launcher jar
    for name in files:
        (home / name).touch()
    command = LocalNeo4j(tmp_path / "data").command()
    cp = command[command.index("-cp") + 1]
    assert cp == classpath.replace("classes", str(home / "classes")).replace("lib/", f"{home / 'lib'}/")
    assert (f"-XX:SharedArchiveFile={home / 'lib' / 'neo4j-local.jsa'}" in command) is archived
    assert command[command.index("-cp") + 2] == "Neo4jLocal"


@pytest.mark.parametrize(
    ("interval_s", "flag"),
    [
        (None, []),  # Neo4j's own 10 s: the demo's server, and the fault tests' own
        (86400, ["--min-replan-interval", "86400"]),  # the suite's session server (tests/stores.py)
        (0, ["--min-replan-interval", "0"]),  # zero is a value, not "unset"
    ],
)
def test_the_replan_interval_is_passed_only_when_set(
    fake_launcher: Path, tmp_path: Path, interval_s: int | None, flag: list[str]
) -> None:
    command = LocalNeo4j(tmp_path / "data", min_replan_interval_s=interval_s).command()
    tail = command[command.index("--page-cache") + 2 :]
    assert tail == flag


STARTER = """
import sys, time
from pathlib import Path
from graphsvc.store.neo4j_local import LocalNeo4j
server = LocalNeo4j(Path(sys.argv[1]))
server.start(timeout_s=60)
print(server.proc.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a parent-death signal is Linux's")
def test_the_launcher_dies_with_the_process_that_started_it(
    fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEO4J", "ready")
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path / "data")], stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    try:
        assert not gone(pid)
        starter.send_signal(signal.SIGKILL)  # no `finally`, no atexit: only the kernel can tell
        starter.wait(timeout=30)
        assert wait_gone(pid), "the launcher outlived the process that started it"
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_demo_says_why_the_local_neo4j_did_not_start(
    fake_launcher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    monkeypatch.setenv("FAKE_NEO4J", "locked")
    done = subprocess.run(
        [exe, "demo", "--store", "neo4j", "--port", "0", "--data-dir", str(tmp_path / "data")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "local Neo4j ready" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("graphsvc: error: local Neo4j exited before it was ready")
