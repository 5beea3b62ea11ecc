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
import socket
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from graphsvc.store.errors import StoreUnavailableError

READY = "NEO4J READY "
FAILED = "NEO4J FAILED"


def launcher_dir() -> Path:
    """Where the launcher and its jars live: GRAPHSVC_NEO4J_LOCAL, else the source checkout's tools/."""
    configured = os.environ.get("GRAPHSVC_NEO4J_LOCAL")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / "tools" / "neo4j-local"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class LocalNeo4j:
    """One Neo4j server process on 127.0.0.1:port with its data in data_dir."""

    data_dir: Path
    port: int = 0
    password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    home: Path = field(default_factory=launcher_dir)
    heap: str = "1g"
    page_cache: str = "256m"
    proc: subprocess.Popen[str] | None = None
    _output: deque[str] = field(default_factory=lambda: deque(maxlen=200))

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
        if (classes / "Neo4jLocal.class").exists():
            classpath, main = f"{classes}{os.pathsep}{lib}/*", ["Neo4jLocal"]
        else:
            classpath, main = f"{lib}/*", [str(self.home / "Neo4jLocal.java")]
        return [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",  # two cores: a parallel collector only competes with the tests
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
        ]

    def start(self, timeout_s: float = 240.0) -> None:
        """Start the server and return once Bolt answers; raise StoreUnavailableError otherwise."""
        if self.port == 0:
            self.port = free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._output.clear()
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the service, which stops us cleanly
        )
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(self.proc, ready), daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                tail = "\n".join(list(self._output)[-15:])
                raise StoreUnavailableError(f"local Neo4j did not start on port {self.port}:\n{tail}")
        if any(line.startswith(FAILED) for line in self._output):
            self.kill()
            raise StoreUnavailableError("local Neo4j failed: " + "\n".join(self._output))

    def _pump(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._output.append(line.rstrip())
            if line.startswith(READY) or line.startswith(FAILED):
                ready.set()
        ready.set()

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
