"""Benchmark: how long the embedded store takes to come back after a crash (not a test).

For each graph size and each compaction setting: load a synthetic DGX H100 SuperPOD through
the real ingest path, churn it (every host's full facts sent again, `rounds` times, as
collectors do), then `kill -9` the redis-server and time a fresh start on the same data
directory until the store answers and the graph is migrated (what a restarted service waits
for before it opens its port). Records the append-only log's base snapshot and incremental
sizes at the crash. "64mb" is what the service ran before (redis's default: the configured
size was never passed); "4mb" is the default now.

    python benchmarks/restart_time.py                # ~5 minutes on 2 cores; writes docs/benchmarks/restart.json
    python benchmarks/restart_time.py --sizes 1024 --rounds 4
    python benchmarks/restart_time.py --sizes 8192 --worst 1,4,16 --out docs/benchmarks/restart_worst.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphsvc.ingest.service import ingest_host
from graphsvc.store.embedded import EmbeddedFalkorDB, EmbeddedOptions, _command
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.synthetic.load import load_cluster

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


def aof_sizes(embedded: EmbeddedFalkorDB) -> tuple[float, float]:
    files = list((embedded.store_dir / "appendonlydir").iterdir())
    base = sum(p.stat().st_size for p in files if ".base." in p.name)
    incr = sum(p.stat().st_size for p in files if p.name.endswith(".incr.aof"))
    return round(base / MB, 1), round(incr / MB, 1)


async def open_graph(opts: EmbeddedOptions) -> tuple[EmbeddedFalkorDB, FalkorBackend, Gateway]:
    embedded = EmbeddedFalkorDB(opts)
    await asyncio.to_thread(embedded.start)
    backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
    await backend.open()
    gateway = Gateway(backend)
    await migrate(gateway)
    return embedded, backend, gateway


async def one(gpus: int, rounds: int, setting: str) -> dict[str, Any]:
    min_size, _, percentage = setting.partition("/")
    data = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        opts = EmbeddedOptions(
            data_dir=data, appendfsync="no", aof_rewrite_min_size=min_size, aof_rewrite_percentage=int(percentage)
        )
        embedded, backend, gw = await open_graph(opts)
        started = time.perf_counter()
        cluster = await load_cluster(gw, f"sized:gpus={gpus}")
        load_s = time.perf_counter() - started
        for _ in range(rounds):
            for host in cluster.hosts:
                result = await ingest_host(gw, host.model_copy(update={"collected_at": datetime.now(UTC)}))
                assert result.applied, result
        await asyncio.sleep(1.0)  # let a rewrite that just started finish, as it would in an hour
        base_mb, incr_mb = aof_sizes(embedded)
        pid = embedded.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the crash
        await backend.close()
        embedded.stop()  # only releases the data-directory lock: the server is dead

        started = time.perf_counter()
        embedded = EmbeddedFalkorDB(opts)
        await asyncio.to_thread(embedded.start)
        store_s = time.perf_counter() - started
        backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
        await backend.open()
        gw = Gateway(backend)
        await migrate(gw)
        restart_s = time.perf_counter() - started
        hosts = (await gw.read("health_counts"))[0]["hosts"]
        assert hosts == len(cluster.hosts), hosts
        await backend.close()
        embedded.stop()
        return {
            "gpus": gpus,
            "hosts": len(cluster.hosts),
            "rewrite": f"at {min_size}, +{percentage}%",
            "churn_rounds": rounds,
            "load_s": round(load_s, 1),
            "aof_base_mb": base_mb,
            "aof_incr_mb": incr_mb,
            "store_ready_s": round(store_s, 2),
            "restart_s": round(restart_s, 2),
        }
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def worst_case(gpus: int, incr_mb: list[float]) -> list[dict[str, Any]]:
    """Restart time against the incremental log's size, on one graph, at its largest.

    After the load the log is compacted, automatic rewrites are switched off, and hosts'
    facts are sent again until the incremental part reaches each size: the crash then comes
    just before the rewrite that a `min-size` of that much would have started, the worst
    moment for that setting.
    """
    data = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    rows = []
    try:
        opts = EmbeddedOptions(data_dir=data, appendfsync="no")
        embedded, backend, gw = await open_graph(opts)
        cluster = await load_cluster(gw, f"sized:gpus={gpus}")
        await backend.close()
        for target in incr_mb:
            embedded.compact()
            _command(embedded.socket_path, "CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
            backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
            await backend.open()
            gw = Gateway(backend)
            i = 0
            while aof_sizes(embedded)[1] < target:
                host = cluster.hosts[i % len(cluster.hosts)]
                await ingest_host(gw, host.model_copy(update={"collected_at": datetime.now(UTC)}))
                i += 1
            base_mb, now_incr = aof_sizes(embedded)
            pid = embedded.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            await backend.close()
            embedded.stop()
            started = time.perf_counter()
            embedded = EmbeddedFalkorDB(opts)
            await asyncio.to_thread(embedded.start)
            store_s = time.perf_counter() - started
            backend = FalkorBackend("topology", unix_socket=str(embedded.socket_path), kind="embedded")
            await backend.open()
            gw = Gateway(backend)
            await migrate(gw)
            restart_s = time.perf_counter() - started
            assert (await gw.read("health_counts"))[0]["hosts"] == len(cluster.hosts)
            await backend.close()
            row = {
                "gpus": gpus,
                "hosts": len(cluster.hosts),
                "host_updates": i,
                "aof_base_mb": base_mb,
                "aof_incr_mb": now_incr,
                "store_ready_s": round(store_s, 2),
                "restart_s": round(restart_s, 2),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
        embedded.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1024,8192")
    parser.add_argument("--rounds", type=int, default=0, help="churn rounds (default: 8 at 1k GPUs, 2 at 8k)")
    parser.add_argument("--settings", default="64mb/100,4mb/100,1mb/10", help="min size/percentage, ...")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "restart.json")
    parser.add_argument("--worst", default="", help="incremental log sizes in MB for the worst-case table, e.g. 1,4,16")
    args = parser.parse_args()
    if args.worst:
        worst = []
        for gpus in [int(s) for s in args.sizes.split(",")]:
            worst += await worst_case(gpus, [float(x) for x in args.worst.split(",")])
        args.out.write_text(json.dumps(worst, indent=1) + "\n")
        print("| GPUs | hosts | log at the crash: base + incremental MB | store ready s | + migrated s |")
        print("|---|---|---|---|---|")
        for r in worst:
            print(f"| {r['gpus']:,} | {r['hosts']:,} | {r['aof_base_mb']} + {r['aof_incr_mb']} "
                  f"| {r['store_ready_s']} | {r['restart_s']} |")  # fmt: skip
        return
    rows = []
    for gpus in [int(s) for s in args.sizes.split(",")]:
        rounds = args.rounds or (8 if gpus <= 1024 else 2)
        for setting in args.settings.split(","):
            row = await one(gpus, rounds, setting)
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print("| GPUs | hosts | rewrite | churn rounds | log at the crash: base + incremental MB | store ready s | "
          "+ migrated s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gpus']:,} | {r['hosts']:,} | {r['rewrite']} | {r['churn_rounds']} "
              f"| {r['aof_base_mb']} + {r['aof_incr_mb']} | {r['store_ready_s']} | {r['restart_s']} |")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
