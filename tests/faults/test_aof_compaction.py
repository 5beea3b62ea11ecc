"""#13.4: the embedded store compacts its append-only log as it runs, so a restart is fast.

The configured rewrite size was never passed to redis-server, so the log grew to 64 MB
before its first compaction and a crashed service replayed all of it (minutes). Here a
store configured to compact at 1 MB takes a few MB of churn: the log must have been
rewritten into a base snapshot plus a small incremental part, and a restart after kill -9
must bring back the graph. (Specifically about the embedded store: it runs its own.)
"""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graphsvc.ingest.service import ingest_host
from graphsvc.settings import Settings
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions, _command
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.synthetic.clusters import build

MB = 1024 * 1024


def aof_files(embedded: EmbeddedFalkorDB) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (embedded.store_dir / "appendonlydir").iterdir()}


def info(embedded: EmbeddedFalkorDB) -> dict[str, str]:
    text = _command(embedded.socket_path, "INFO", "persistence") or ""
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_settings_reach_redis_server(tmp_path: Path) -> None:
    embedded = EmbeddedFalkorDB(
        EmbeddedOptions(data_dir=tmp_path, aof_rewrite_min_size="3mb", aof_rewrite_percentage=50)
    )
    embedded.start()
    try:

        def config(name: str) -> str:
            reply = _command(embedded.socket_path, "CONFIG", "GET", name) or ""
            return reply.split("\r\n")[-2]

        assert config("auto-aof-rewrite-min-size") == str(3 * MB)
        assert config("auto-aof-rewrite-percentage") == "50"
        assert config("aof-use-rdb-preamble") == "yes"
    finally:
        embedded.stop()


def test_service_settings_default_to_continuous_compaction() -> None:
    settings = Settings()
    assert settings.aof_rewrite_min_size == "4mb"
    assert settings.aof_rewrite_percentage == 25


async def test_churn_is_compacted_and_survives_kill9(tmp_path: Path) -> None:
    opts = EmbeddedOptions(data_dir=tmp_path, appendfsync="no", aof_rewrite_min_size="1mb")
    embedded = EmbeddedFalkorDB(opts)
    embedded.start()
    backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
    await backend.open()
    gateway = Gateway(backend)
    await migrate(gateway)
    cluster = build("l40s:hosts=8")
    start = datetime.now(UTC) - timedelta(hours=1)
    written = 0
    try:
        # Bounded work: 40 rounds of every host's full facts (about 5 MB of log in all).
        for round_ in range(40):
            for host in cluster.hosts:
                facts = host.model_copy(update={"collected_at": start + timedelta(seconds=round_)})
                assert (await ingest_host(gateway, facts)).applied
            written = sum(aof_files(embedded).values())
            if int(info(embedded).get("aof_rewrites", "0")) >= 2:
                break
        # A rewrite the last writes started finishes in the background: wait for it (bounded
        # polls, not a timing assertion) so the files below are what it left.
        for _ in range(600):
            stats = info(embedded)
            idle = stats.get("aof_rewrite_in_progress") == "0" and stats.get("aof_rewrite_scheduled") == "0"
            if idle and int(stats.get("aof_rewrites", "0")) >= 1:
                break
            await asyncio.sleep(0.1)
        assert int(stats["aof_rewrites"]) >= 1, (stats, aof_files(embedded))
        files = aof_files(embedded)
        incr = sum(size for name, size in files.items() if name.endswith(".incr.aof"))
        assert any(name.endswith(".base.rdb") for name in files), files
        assert incr < 2 * MB, files  # the incremental part stays near the rewrite size
        assert written < 8 * MB

        pid = embedded.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await backend.close()
        embedded.stop()  # the server is dead already: this only releases the lock

        again = EmbeddedFalkorDB(opts)
        again.start()
        backend = FalkorBackend("topology", unix_socket=str(again.socket_path), kind="embedded")
        await backend.open()
        rows = await Gateway(backend).read("health_counts")
        assert rows[0]["hosts"] == len(cluster.hosts)
        embedded = again
    finally:
        await backend.close()
        embedded.stop()
