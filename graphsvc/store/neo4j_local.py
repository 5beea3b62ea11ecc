"""A local Neo4j 5 Community server for tests and the demo, without Docker.

``tools/neo4j-local/Neo4jLocal.java`` embeds the database and opens Bolt on a loopback port;
``scripts/neo4j-jars.sh`` fetches its jars from Maven Central into ``tools/neo4j-local/lib``
(GPLv3, git-ignored, cached between runs) and compiles the launcher. This module starts that
process, waits for its ready line, and stops it (SIGTERM: clean shutdown) or kills it (SIGKILL:
a crash, for the fault tests). Production runs a real Neo4j deployment instead.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from graphsvc.store.errors import StoreUnavailableError

READY = "NEO4J READY "
FAILED = "NEO4J FAILED"
LAUNCHER_JAR = "neo4j-local-launcher.jar"  # the compiled launcher, beside the Neo4j jars in lib/
CLASS_ARCHIVE = "neo4j-local.jsa"  # the classes a start loads (AppCDS), mapped instead of read from jars


def launcher_dir() -> Path:
    """Where the launcher and its jars live: GRAPHSVC_NEO4J_LOCAL, else the source checkout's tools/."""
    configured = os.environ.get("GRAPHSVC_NEO4J_LOCAL")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / "tools" / "neo4j-local"


# Run in front of the launcher (then replaced by it, same pid): ask the kernel to SIGTERM it when
# the thread that started it exits, however that happens. A SIGKILL of the service, or a signal
# that kills it before its `finally` blocks run, would otherwise orphan the JVM, which keeps its
# port and its data directory's lock. SIGTERM: the launcher's shutdown hook closes the database.
_DIE_WITH_PARENT = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, ctypes.c_ulong(signal.SIGTERM))  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit("local Neo4j: the process that started it is gone")
os.execv(sys.argv[2], sys.argv[2:])
"""


def die_with_this_thread(command: list[str]) -> list[str]:
    """`command` behind the parent-death wrapper, where it applies: Linux, and the main thread.

    Why the main thread only: the kernel signals when the starting *thread* exits, so a server
    started from a short-lived worker thread would be stopped with that thread."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return command
    if threading.current_thread() is not threading.main_thread():
        return command
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *command]


def last_words(lines: list[str]) -> str:
    """A launcher's output as one line: the deepest cause of a Java stack trace (its last
    `Caused by:` or exception line, not the `at ...` frames), else its last lines."""
    said = [line.strip() for line in lines if line.strip()]
    telling = [
        line.removeprefix("Caused by: ")
        for line in said
        if not line.startswith(("at ", "...")) and ("Exception" in line or "Error" in line)
    ]
    if telling:
        return telling[-1]
    return " | ".join(said[-3:]) or "(no output)"


@dataclass
class LocalNeo4j:
    """One Neo4j server process on 127.0.0.1:port with its data in data_dir."""

    data_dir: Path
    port: int = 0  # 0 until the first start: the launcher binds a port the kernel picks, then keeps it
    password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    home: Path = field(default_factory=launcher_dir)
    heap: str = "1g"
    page_cache: str = "256m"
    # How long a cached plan is kept before Neo4j checks it against the statistics again (None:
    # Neo4j's own 10 s, what the demo and the fault tests' servers run). The test suite's server
    # sets it past a session's length (tests/stores.py): it gets a different graph before every
    # test, so every check found the statistics diverged and replanned.
    min_replan_interval_s: int | None = None
    proc: subprocess.Popen[str] | None = None
    _output: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    _verdict: str | None = None  # the first READY or FAILED line

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def user(self) -> str:
        return "neo4j"

    def command(self) -> list[str]:
        lib = self.home / "lib"
        classes = self.home / "classes"
        java = shutil.which("java")
        if java is None:
            raise StoreUnavailableError("no `java` on PATH: Neo4j 5.26 needs Java 17 (openjdk-17-jre-headless)")
        if not lib.is_dir() or not any(lib.glob("neo4j-5*.jar")):
            raise StoreUnavailableError(f"no Neo4j jars in {lib}: run scripts/neo4j-jars.sh (fetches them from Maven)")
        archive: list[str] = []
        if (lib / LAUNCHER_JAR).exists():
            classpath, main = f"{lib}/*", ["Neo4jLocal"]
            if (lib / CLASS_ARCHIVE).exists():  # scripts/neo4j-jars.sh: ~4 s less a start
                archive = [f"-XX:SharedArchiveFile={lib / CLASS_ARCHIVE}"]
        elif (classes / "Neo4jLocal.class").exists():
            classpath, main = f"{classes}{os.pathsep}{lib}/*", ["Neo4jLocal"]
        else:
            classpath, main = f"{lib}/*", [str(self.home / "Neo4jLocal.java")]
        return [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",  # two cores: a parallel collector only competes with the tests
            *archive,
            "-cp",
            classpath,
            *main,
            "--port",
            str(self.port),
            "--data",
            str(self.data_dir),
            "--password",
            self.password,
            "--page-cache",
            self.page_cache,
            *([] if self.min_replan_interval_s is None else ["--min-replan-interval", str(self.min_replan_interval_s)]),
        ]

    def start(self, timeout_s: float = 240.0) -> None:
        """Start the server and return once Bolt answers; raise StoreUnavailableError otherwise.

        Whatever ends the wait early (a failure, a timeout, a Ctrl-C or SIGTERM raised as an
        exception in the caller) stops the launcher: a half-started server must not outlive us."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._output.clear()
        self._verdict = None
        self.proc = subprocess.Popen(
            die_with_this_thread(self.command()),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the service, which stops us cleanly
        )
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(self.proc, ready), daemon=True).start()
        try:
            self._await_ready(self.proc, ready, timeout_s)
        except StoreUnavailableError:
            self.kill()
            raise
        except BaseException:
            self.stop(timeout_s=30)
            raise

    def _await_ready(self, proc: subprocess.Popen[str], ready: threading.Event, timeout_s: float) -> None:
        """Wait for the ready line. The end of the launcher's output is not readiness: on a data
        directory another server holds it dies of an uncaught exception, with no FAILED line."""
        deadline = time.monotonic() + timeout_s
        while not ready.wait(0.2):
            if proc.poll() is not None:
                ready.wait(5)  # its last lines, still in the pipe
                break
            if time.monotonic() > deadline:
                where = f"port {self.port}" if self.port else "a free port"
                raise StoreUnavailableError(
                    f"local Neo4j did not start on {where} in {timeout_s:.0f} s: {last_words(self.output())}"
                )
        verdict = self._verdict or ""
        if verdict.startswith(FAILED):
            raise StoreUnavailableError(f"local Neo4j failed: {verdict.removeprefix(FAILED).strip()}")
        if not verdict.startswith(READY):
            try:
                status: int | str = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                status = "none: still running"
            raise StoreUnavailableError(
                f"local Neo4j exited before it was ready (exit status {status}): {last_words(self.output())}"
            )
        port = int(verdict.rsplit(":", 1)[1])  # the port it listens on: the kernel's choice for port 0
        if port <= 0:  # a launcher built before it said which port it bound (start() kills it)
            raise StoreUnavailableError(
                f"local Neo4j named no port it listens on ({verdict}): rebuild it with scripts/neo4j-jars.sh"
            )
        self.port = port

    def _pump(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._output.append(line.rstrip())
            if self._verdict is None and (line.startswith(READY) or line.startswith(FAILED)):
                self._verdict = line.rstrip()
                ready.set()
        ready.set()  # the end of output: the launcher exited (start() tells which way)

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGTERM: the launcher's shutdown hook closes the database cleanly."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, as a crash would: Neo4j recovers from its transaction log on the next start."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc = None

    def output(self) -> list[str]:
        return list(self._output)
