"""The embedded FalkorDB: start, stop, stale sockets, orphans, locks and clear errors."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from graphsvc.store.embedded import (
    _LAUNCHER,
    JEMALLOC_CONF,
    EmbeddedFalkorDB,
    EmbeddedOptions,
    _command,
    _ping,
    launch_command,
)
from graphsvc.store.errors import EmbeddedStoreError


def _server(tmp_path: Path, **kw: object) -> EmbeddedFalkorDB:
    return EmbeddedFalkorDB(EmbeddedOptions(data_dir=tmp_path / "data", **kw))  # type: ignore[arg-type]


def test_start_and_stop_cleanly(tmp_path: Path) -> None:
    s = _server(tmp_path)
    s.start()
    try:
        assert _ping(s.socket_path) == "PONG"
        assert (s.store_dir / "appendonlydir").is_dir()
    finally:
        s.stop()
    assert _ping(s.socket_path) == ""


def _allocator_option(s: EmbeddedFalkorDB, name: str) -> str:
    stats = _command(s.socket_path, "MEMORY", "MALLOC-STATS") or ""
    return next(line.split(":", 1)[1].strip() for line in stats.splitlines() if line.strip().startswith(f"opt.{name}:"))


def test_the_store_zeroes_memory_with_memset_and_runs_without_huge_pages(tmp_path: Path) -> None:
    """jemalloc's `thp:always` (memset, not madvise and page faults, for calloc's zeroed blocks)
    and the store's process with transparent huge pages off (graphsvc/store/embedded.py says why)."""
    assert JEMALLOC_CONF == "thp:always"
    s = _server(tmp_path)
    s.start()
    try:
        assert _allocator_option(s, "thp") == '"always"'
        status = Path(f"/proc/{s.pid}/status").read_text()
        if "THP_enabled:" in status:  # Linux 6.? and later report it
            assert "THP_enabled:\t0" in status
        assert b"redis-server" in Path(f"/proc/{s.pid}/cmdline").read_bytes()  # the launcher exec'd it
    finally:
        s.stop()


def test_an_operators_allocator_options_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JE_MALLOC_CONF", "thp:never,narenas:2")
    s = _server(tmp_path)
    s.start()
    try:
        assert _allocator_option(s, "thp") == '"never"'
        assert _allocator_option(s, "narenas") == "2"
    finally:
        s.stop()


def test_an_empty_allocator_option_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JE_MALLOC_CONF", "")  # e.g. systemd's `Environment=JE_MALLOC_CONF=`
    s = _server(tmp_path)
    s.start()
    try:
        assert _allocator_option(s, "thp") == '"always"'
    finally:
        s.stop()


def _launched_env(prelude: str) -> list[str]:
    """The launcher run with `prelude` first, exec'ing `env` instead of redis-server: the
    allocator option it handed on."""
    env_bin = shutil.which("env")
    assert env_bin is not None
    code = prelude + "exec(" + repr(_LAUNCHER) + ")"
    clean = {k: v for k, v in os.environ.items() if k != "JE_MALLOC_CONF"}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, JEMALLOC_CONF, env_bin],
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if line.startswith("JE_MALLOC_CONF=")]


def test_the_launcher_sets_the_allocator_option_only_where_huge_pages_went_off() -> None:
    """`thp:always` alone would ask the kernel for huge pages (where its mode is `madvise`): the
    launcher sets it only after switching them off for the process succeeded."""
    assert _launched_env("") == ["JE_MALLOC_CONF=thp:always"]
    assert _launched_env("import sys\nsys.modules['ctypes'] = None\n") == []  # no prctl: no option


def test_redis_server_starts_directly_where_the_launcher_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = ["/bin/redis-server", "--port", "0"]
    assert launch_command(cmd, {})[-len(cmd) - 1 :] == [JEMALLOC_CONF, *cmd]
    assert launch_command(cmd, {"JE_MALLOC_CONF": "narenas:2"})[-len(cmd) - 1 :] == ["", *cmd]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert launch_command(cmd, {}) == cmd
    monkeypatch.delattr(sys, "frozen")
    monkeypatch.setattr(sys, "executable", "")
    assert launch_command(cmd, {}) == cmd


def test_a_store_that_cannot_be_launched_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An OSError from starting the process (here: the launcher's Python gone) is the store's own
    error, which the supervisor's restart handles, not an exception that ends it."""
    monkeypatch.setattr("graphsvc.store.embedded.launch_command", lambda cmd, env: ["/nonexistent/python3", *cmd])
    s = _server(tmp_path)
    with pytest.raises(EmbeddedStoreError, match="could not start redis-server"):
        s.start()


def test_stale_socket_file_is_removed(tmp_path: Path) -> None:
    s = _server(tmp_path)
    s.data_dir.mkdir(parents=True)
    s.socket_path.write_text("stale")  # a plain file where a socket was: nothing listens
    s.start()
    try:
        assert _ping(s.socket_path) == "PONG"
    finally:
        s.stop()


def test_orphaned_server_from_a_crash_is_replaced(tmp_path: Path) -> None:
    first = _server(tmp_path)
    first.start()
    orphan = first.pid
    assert orphan is not None
    # Simulate a service killed with -9: its lock goes away, its redis-server lives on.
    assert first._lock is not None
    first._lock.close()
    first._lock = None
    first._proc = None
    second = _server(tmp_path)
    second.start()
    try:
        assert second.pid != orphan
        assert _ping(second.socket_path) == "PONG"
        deadline = time.monotonic() + 10
        while Path(f"/proc/{orphan}").exists() and time.monotonic() < deadline:
            try:
                os.waitpid(orphan, os.WNOHANG)
            except ChildProcessError:
                break
            time.sleep(0.05)
    finally:
        second.stop()


def test_second_service_on_same_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    first = _server(tmp_path)
    first.start()
    try:
        with pytest.raises(EmbeddedStoreError, match="in use by another graphsvc"):
            _server(tmp_path).start()
        assert _ping(first.socket_path) == "PONG"
    finally:
        first.stop()


def test_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedStoreError, match="redis-server not found"):
        _server(tmp_path, redis_server=str(tmp_path / "nope" / "redis-server")).start()


def test_server_that_will_not_start_shows_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "fake-redis"
    fake.write_text("#!/bin/sh\necho 'fatal: cannot start' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(EmbeddedStoreError, match="exited with code 3"):
        _server(tmp_path, redis_server=str(fake)).start()


def test_long_data_dir_gets_a_short_socket_path(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    s = EmbeddedFalkorDB(EmbeddedOptions(data_dir=deep))
    assert len(str(s.socket_path)) <= 100
    s.start()
    try:
        assert _ping(s.socket_path) == "PONG"
    finally:
        s.stop()


async def test_clean_stop_compacts_the_log_and_restart_keeps_the_graph(tmp_path: Path) -> None:
    from graphsvc.settings import Settings
    from graphsvc.store.factory import open_store
    from tests.cluster_helpers import load

    settings = Settings(data_dir=tmp_path / "data", appendfsync="no")
    async with open_store(settings) as gw:
        cluster = await load(gw, "superpod-h100:sus=2")
    aof = tmp_path / "data" / "falkordb" / "appendonlydir"
    assert sum(p.stat().st_size for p in aof.glob("*.incr.aof")) < 1024 * 1024  # replay stays short
    assert any(p.stat().st_size > 0 for p in aof.glob("*.base.rdb"))
    async with open_store(settings) as gw:
        counts = (await gw.read("health_counts"))[0]
    assert counts["hosts"] == len(cluster.hosts)


def test_compact_waits_for_a_rewrite_already_running_then_rewrites_again(tmp_path: Path) -> None:
    """redis refuses BGREWRITEAOF while its own rewrite runs; compact() waited for nothing then,
    and a stop left the log written since that rewrite began to replay at the next start. Here a
    rewrite slowed by redis's `rdb-key-save-delay` (per key saved, in microseconds) is running
    when compact() is called: it answers True only after that one and a second have finished."""
    from graphsvc.store.embedded import _command

    s = _server(tmp_path)
    s.start()
    try:
        for i in range(3):
            assert _command(s.socket_path, "SET", f"k{i}", "v") is not None
        assert _command(s.socket_path, "CONFIG", "SET", "rdb-key-save-delay", "1000000") is not None
        assert _command(s.socket_path, "BGREWRITEAOF") is not None
        info = _command(s.socket_path, "INFO", "persistence") or ""
        # Three keys at 1 s each: ~3 s for the next two round trips, however loaded the machine.
        assert "aof_rewrite_in_progress:1" in info
        assert _command(s.socket_path, "BGREWRITEAOF") is None  # what compact() met: refused
        assert _command(s.socket_path, "CONFIG", "SET", "rdb-key-save-delay", "0") is not None
        assert s.compact(timeout_s=60.0)
        info = _command(s.socket_path, "INFO", "persistence") or ""
        assert "aof_rewrite_in_progress:0" in info and "aof_rewrites:2" in info, info
    finally:
        s.stop()


async def test_plan_cache_holds_every_named_statement_unless_set(tmp_path: Path) -> None:
    from graphsvc.store.falkordb_backend import FalkorBackend
    from graphsvc.store.plan_cache import sized_plan_cache

    for kw, expected in (({}, sized_plan_cache()), ({"plan_cache_size": 40}, 40)):
        s = _server(tmp_path / str(expected), **kw)
        s.start()
        backend = FalkorBackend("plans", unix_socket=str(s.socket_path))
        try:
            await backend.open()
            assert await backend.plan_cache_size() == expected
        finally:
            await backend.close()
            s.stop()


async def _rewrite_the_log_live(conn: Any) -> None:
    """What the store does whenever its log outgrows its base: a rewrite while it runs, whose RDB
    the next start loads. Waits for a rewrite in flight first (a second one is refused), then for
    this one, which runs in a child process (bounded polls; a rewrite that never ends fails)."""
    stats: dict[str, Any] = {}
    for _ in range(2400):
        stats = await conn.execute_command("INFO", "persistence")
        if stats["aof_rewrite_in_progress"] == 0 and stats["aof_rewrite_scheduled"] == 0:
            break
        await asyncio.sleep(0.05)
    done = int(stats["aof_rewrites"])
    await conn.execute_command("BGREWRITEAOF")
    for _ in range(2400):
        stats = await conn.execute_command("INFO", "persistence")
        if int(stats["aof_rewrites"]) > done and stats["aof_rewrite_in_progress"] == 0:
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"the log rewrite did not finish: {stats}")


async def test_every_tie_bucket_stays_placeable_after_a_restart(tmp_path: Path) -> None:
    """FalkorDB 4.16, after the log was rewritten while it ran (as it is whenever the log outgrows
    its base by a quarter) and the graph loaded again from that RDB, leaves index entries valued
    0 out of its range indexes. Tie buckets are numbered from 1 (graphsvc.store.schema.tie_bucket):
    numbered from 0, the NVLink domains of bucket 0 were invisible to placement_domains_fit's seeks
    after such a restart, and this request's candidates changed (this test failed so)."""
    from graphsvc.placement.engine import PlacementEngine
    from graphsvc.placement.request import parse_request
    from graphsvc.settings import Settings
    from graphsvc.store.factory import open_store
    from graphsvc.store.schema import TIE_BUCKETS
    from tests.cluster_helpers import load
    from tests.stores import adhoc

    settings = Settings(data_dir=tmp_path / "data", appendfsync="no")
    request = parse_request("8xH100 nvlink=full-mesh limit=20")  # the first 20 of 31 idle domains
    async with open_store(settings) as gw:
        await load(gw, "superpod-h100:sus=1")
        before = await PlacementEngine(gw).place(request)
        await _rewrite_the_log_live(gw.backend._database().connection)  # type: ignore[attr-defined]
    async with open_store(settings) as gw:  # the graph loaded from the RDB that rewrite wrote
        after = await PlacementEngine(gw).place(request)
        count = adhoc(
            "count",
            "MATCH (d:NVLinkDomain) WHERE d.free_gpus = 8 AND d.tie_bucket = $b WITH count(d) AS seek "
            "MATCH (d:NVLinkDomain) WHERE coalesce(d.free_gpus, -1) = 8 AND coalesce(d.tie_bucket, -1) = $b "
            "RETURN seek, count(d) AS scan",
        )
        for bucket in range(1, TIE_BUCKETS + 1):
            rows = await gw.backend.run(count, {"b": bucket}, write=False, timeout_s=30)
            assert rows[0]["seek"] == rows[0]["scan"], bucket
    assert len(before.candidates) == 20
    assert [c.rank_order for c in after.candidates] == [c.rank_order for c in before.candidates]
