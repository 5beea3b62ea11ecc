"""The service as deployed, for benchmarks whose clients live in another process (not a test).

The in-process benchmarks (httpx's ASGI transport) run their clients in the service's own
interpreter, so the clients' CPU (~30% of that process in a reservation profile) counts as the
service's and competes for its GIL. `Served` starts `graphsvc serve` in its own process
(uvicorn, the embedded store with appendfsync always, the startup heap frozen by its lifespan)
and gives the port and the process ids; `Connection` is a minimal keep-alive HTTP/1.1 client (a
few tens of microseconds a request) so the clients take little of the machine. CPU comes from
/proc (Linux only), store statements from the service's /metrics.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

CLI = "import sys; from graphsvc.cli import main; sys.exit(main())"


def _tree() -> Path:
    """The checkout whose graphsvc this process imports (PYTHONPATH may name another one, e.g. an
    older commit measured side by side). `python -c` puts its working directory first on the
    service's sys.path, so the service and the CLI are started there: started elsewhere, they
    imported whatever graphsvc the caller's directory held, not the tree being measured."""
    spec = importlib.util.find_spec("graphsvc")
    if spec is None or spec.origin is None:
        raise RuntimeError("graphsvc is not importable: install it or set PYTHONPATH to a checkout")
    return Path(spec.origin).resolve().parents[1]


TREE = _tree()
TICK = os.sysconf("SC_CLK_TCK")


Snapshot = tuple[dict[str, float], tuple[float, float, float, float], tuple[int, int]]
"""Statements by name, CPU seconds (service, store, clients, the store's children), the store's
log (bytes, rewrites)."""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_s(pid: int | None, *, children: bool = False) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat); 0.0 for None. With
    `children`, those of its children it has waited for instead (the store's log rewrites)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / TICK


class Connection:
    """One keep-alive HTTP/1.1 connection; JSON bodies in and out."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str | None = None) -> None:
        self.reader, self.writer = reader, writer
        self.authorization = f"authorization: Bearer {token}\r\n" if token else ""

    @classmethod
    async def open(cls, port: int, token: str | None = None) -> Connection:
        """`token`: sent with every request (a service started with `Served(auth=True)`)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, token)

    async def send(self, method: str, path: str, body: bytes = b"") -> dict[str, Any]:
        head = (
            f"{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
            f"{self.authorization}content-length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        header = await self.reader.readuntil(b"\r\n\r\n")
        status = int(header.split(b" ", 2)[1])
        match = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", header)
        if match is None:
            raise RuntimeError(f"{path}: no content-length in {header!r}")
        payload = await self.reader.readexactly(int(match.group(1)))
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}: {payload[:300]!r}")
        out: dict[str, Any] = json.loads(payload)
        return out

    async def post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.send("POST", path, json.dumps(body).encode() if body is not None else b"")

    def close(self) -> None:
        self.writer.close()


class Served:
    """`graphsvc serve --insecure-dev` on a free port with a fresh data directory, rate limits opened.
    The port is the kernel's choice as the service binds it (`--port 0 --port-file`), where the
    tree measured has that option; an older tree's gets a port found free beforehand.

    `auth=True`: with tokens instead, as deployed for schedulers: `tokens["scheduler"]` for the
    clients (a scheduler's renew and release check that it owns the reservation), and the CLI
    (`cli`) as an operator."""

    def __init__(self, *, auth: bool = False, **settings: str) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="bench-served-"))
        self.port = 0
        self.env = {
            **os.environ,
            "GRAPHSVC_DATA_DIR": str(self.data),
            "GRAPHSVC_APPENDFSYNC": "always",
            "GRAPHSVC_MUTATION_RATE_PER_MINUTE": "1e9",
            "GRAPHSVC_MUTATION_BURST": "1000000",
            # The query budget too: the REST fast path spends it since stop 59 (~3 units a reserve).
            "GRAPHSVC_GRAPHQL_COST_PER_MINUTE": "1e12",
            "GRAPHSVC_GRAPHQL_COST_BURST": "1000000000",
            "GRAPHSVC_LOG_LEVEL": "warning",
            **{f"GRAPHSVC_{k.upper()}": v for k, v in settings.items()},
        }
        self.tokens: dict[str, str] = {}
        if auth:
            from graphsvc.security.auth import Role, new_token

            entries = []
            for role in (Role.SCHEDULER, Role.OPERATOR):
                self.tokens[role.value], entry = new_token(f"bench-{role.value}", role)
                entries.append(entry)
            self.env["GRAPHSVC_TOKENS"] = json.dumps(entries)
            self.env["GRAPHSVC_TOKEN"] = self.tokens[Role.OPERATOR.value]  # the CLI's (load)
        self.process: subprocess.Popen[bytes] | None = None
        self.store_pid: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        dev = [] if self.tokens else ["--insecure-dev"]
        port_file = self.data / "service.port"
        serve_help = subprocess.run([sys.executable, "-c", CLI, "serve", "--help"], env=self.env, cwd=TREE,
                                    capture_output=True, text=True, check=True).stdout  # fmt: skip
        if "--port-file" in serve_help:
            listen = ["--port", "0", "--port-file", str(port_file)]
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            listen = ["--port", str(self.port)]
        self.process = subprocess.Popen([sys.executable, "-c", CLI, "serve", *dev, *listen], env=self.env, cwd=TREE)
        for _ in range(1200):
            if self.port == 0 and port_file.exists():
                self.port = int(port_file.read_text())
            if self.port == 0:
                if self.process.poll() is not None:
                    raise SystemExit("the service did not start")
                time.sleep(0.1)
                continue
            try:
                self.statements()
                break
            except OSError:
                if self.process.poll() is not None:
                    raise SystemExit("the service did not start") from None
                time.sleep(0.1)
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                if "redis" in Path(f"/proc/{child}/cmdline").read_text():
                    self.store_pid = int(child)  # the embedded store; None: not found, its CPU unreported
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.data, ignore_errors=True)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cli(self, *args: str) -> None:
        """A `graphsvc` client command against this service (e.g. load PROFILE)."""
        subprocess.run([sys.executable, "-c", CLI, *args, "--server", self.url], env=self.env, cwd=TREE, check=True)

    def statements(self) -> dict[str, float]:
        """Store statements run so far, by query name (the Prometheus histogram's counts)."""
        text = urllib.request.urlopen(f"{self.url}/metrics", timeout=30).read().decode()  # noqa: S310
        pattern = r'^graphsvc_store_query_seconds_count\{query="([^"]+)"\} ([0-9.e+]+)$'
        return {m.group(1): float(m.group(2)) for m in re.finditer(pattern, text, re.MULTILINE)}

    def cpu(self) -> tuple[float, float, float, float]:
        """CPU seconds so far: the service process, its store, this (the clients') process, and
        the store's children (its log rewrites, each a fork that writes the whole graph)."""
        return cpu_s(self.pid), cpu_s(self.store_pid), time.process_time(), cpu_s(self.store_pid, children=True)

    def store_log(self) -> tuple[int, int]:
        """The embedded store's append-only log so far: the bytes its process sent to storage
        (/proc/PID/io `write_bytes`, counted by the page dirtied: the log's appends, and each
        rewrite's new base file, written by a child the kernel adds to it once waited for), and
        the rewrites its log file reports finished."""
        if self.store_pid is None:
            return 0, 0
        io = dict(line.split(": ") for line in Path(f"/proc/{self.store_pid}/io").read_text().splitlines())
        log = self.data / "falkordb.log"
        rewrites = log.read_text(errors="replace").count("Background AOF rewrite finished") if log.exists() else 0
        return int(io["write_bytes"]), rewrites

    def snapshot(self) -> Snapshot:
        return self.statements(), self.cpu(), self.store_log()

    def costs(self, before: Snapshot, n: int, unit: str) -> dict[str, Any]:
        """Since `before`, per `unit` (n of them): store statements, CPU ms of the service, its
        store, the clients and the store's log rewrites, and KB the store wrote (its rewrites'
        too: the kernel adds a child's I/O to its parent's once waited for); the log's rewrites;
        the statements by name."""
        statements, cpu, log = self.snapshot()
        ran = {k: v - before[0].get(k, 0.0) for k, v in sorted(statements.items()) if v > before[0].get(k, 0.0)}
        service_s, store_s, client_s, rewrite_s = (b - a for a, b in zip(before[1], cpu, strict=True))
        written, rewrites = (b - a for a, b in zip(before[2], log, strict=True))
        n = max(1, n)
        return {
            f"store_statements_per_{unit}": round(sum(ran.values()) / n, 2),
            f"service_cpu_ms_per_{unit}": round(service_s * 1000 / n, 2),
            f"store_cpu_ms_per_{unit}": round(store_s * 1000 / n, 2) if self.store_pid is not None else None,
            f"client_cpu_ms_per_{unit}": round(client_s * 1000 / n, 3),
            f"store_rewrite_cpu_ms_per_{unit}": round(rewrite_s * 1000 / n, 3) if self.store_pid is not None else None,
            f"store_written_kb_per_{unit}": round(written / 1024 / n, 2) if self.store_pid is not None else None,
            "store_log_rewrites": rewrites if self.store_pid is not None else None,
            "statements": {k: int(v) for k, v in ran.items()},
        }
