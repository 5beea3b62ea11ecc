"""Stopping the service while an explorer tab is open (probe 63).

Each explorer tab holds the `events` subscription open over HTTP (graphql-sse). Before: SIGTERM
did not exit while one was open (uvicorn waited for the response to end, which an events stream
never does; the service exited only when the tab closed), and a second Ctrl-C then skipped the
app's shutdown, leaving the embedded FalkorDB (redis-server) running with its data directory.
Both run the real service as a child process; the waits are bounded numbers of polls, not timings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx

from tests.service import ServiceProcess

EVENTS = {"query": "subscription { events { kind subject } }"}
SSE = {"accept": "text/event-stream", "content-type": "application/json"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError, ValueError):  # a zombie is dead: its state is Z
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    return True


def _store_children(pid: int) -> list[int]:
    """The redis-server processes whose parent is `pid`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
            if int(rest[1]) == pid and "redis" in name:
                out.append(int(entry.name))
    return out


def _wait_exit(svc: ServiceProcess, polls: int = 600) -> int | None:
    """The service's exit status, or None if it still runs after `polls` polls of 0.1 s."""
    assert svc.proc is not None
    for _ in range(polls):
        if svc.proc.poll() is not None:
            return svc.proc.returncode
        time.sleep(0.1)
    return None


def _cleanup(svc: ServiceProcess, store_pid: int) -> None:
    if svc.proc is not None and svc.proc.poll() is None:
        svc.proc.kill()
        svc.proc.wait()
    if _alive(store_pid):
        os.kill(store_pid, signal.SIGKILL)


def _open_stream(client: httpx.Client, url: str) -> tuple[threading.Thread, list[bytes], list[BaseException]]:
    """An events stream read on a thread, as a tab holds it: (the reader, what it read, what it raised)."""
    got: list[bytes] = []
    raised: list[BaseException] = []
    opened = threading.Event()

    def read() -> None:
        try:
            with client.stream("POST", f"{url}/graphql", headers=SSE, json=EVENTS) as resp:
                assert resp.status_code == 200, resp.status_code
                opened.set()
                for chunk in resp.iter_bytes():
                    got.append(chunk)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            raised.append(exc)
        finally:
            opened.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert opened.wait(60), "the events stream did not open"
    assert not raised, raised
    return reader, got, raised


def test_sigterm_with_an_open_event_stream_exits_and_stops_the_store(tmp_path: Path) -> None:
    svc = ServiceProcess(tmp_path / "data")
    svc.start()
    assert svc.proc is not None
    store_pid = int((svc.data_dir / "falkordb.pid").read_text())
    assert _store_children(svc.proc.pid) == [store_pid]  # the service's one redis-server child
    try:
        with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
            reader, got, raised = _open_stream(client, svc.url)
            svc.proc.send_signal(signal.SIGTERM)
            assert _wait_exit(svc) is not None, f"still running after SIGTERM: {svc.log_tail()}"
            reader.join(60)
            assert not reader.is_alive()
        assert b"event: complete" in b"".join(got), (got, raised)  # ended by the service, not cut
        assert not _alive(store_pid), "the embedded store outlived the service"
        assert "Traceback" not in svc.log_tail(20_000), svc.log_tail()
    finally:
        _cleanup(svc, store_pid)


def test_a_second_sigint_still_stops_the_store(tmp_path: Path) -> None:
    """The first Ctrl-C waits for the requests in flight; one that never completes (a body that
    never comes) holds it, so the operator presses Ctrl-C again: the service exits, and its
    embedded store with it."""
    svc = ServiceProcess(tmp_path / "data")
    svc.start()
    assert svc.proc is not None
    store_pid = int((svc.data_dir / "falkordb.pid").read_text())
    assert _store_children(svc.proc.pid) == [store_pid]  # the service's one redis-server child
    host, port = "127.0.0.1", svc.port
    try:
        with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
            _open_stream(client, svc.url)
            stuck = socket.create_connection((host, port))  # a request whose body never comes
            stuck.sendall(
                b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"
            )
            svc.proc.send_signal(signal.SIGINT)
            for _ in range(600):  # the first SIGINT took: the service stopped listening
                try:
                    socket.create_connection((host, port), timeout=1).close()
                except OSError:
                    break
                time.sleep(0.1)
            svc.proc.send_signal(signal.SIGINT)
            assert _wait_exit(svc) is not None, f"still running after a second SIGINT: {svc.log_tail()}"
            stuck.close()
        for _ in range(100):
            if not _alive(store_pid):
                break
            time.sleep(0.1)
        assert not _alive(store_pid), "the embedded store outlived the service"
    finally:
        _cleanup(svc, store_pid)
