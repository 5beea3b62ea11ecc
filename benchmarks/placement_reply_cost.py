"""Benchmark: the multi-host request's statements, in one and beside each other, and where their time goes (not a test).

`32xH100 ib-hops<=1` reads the leaves (`placement_leaves_fit`) and, beside it on another
connection, the cluster's free blocks (`placement_cluster_blocks`), with the parameters the
placement engine sends (free_blocks_forms.captured_params). On a copy of a kept store from
`placement_latency.py --keep`, raw commands through the service's own connection:

- `reply`: the leaf statement's wall time against FalkorDB's own execution time (the reply's last
  statistic), the reply's size in bytes and in values, and what the client spends on it: hiredis
  reading it (fed the reply's bytes, alone) and `parse_rows` turning it into rows.
- four shapes, taking turns run by run (median over `--runs`, after 5):
  - `one_statement`: the blocks inside the leaf statement, as until stop 56
    (placement_store_state.one_statement);
  - `beside`: the two statements sent at once (asyncio.gather), as the engine sends them;
  - `leaves`: the leaf statement alone;
  - `leaves_packed`: the leaf statement with each free GPU of its host maps as one string (its
    fields joined by '|', numbers by toString) instead of a list of nine values: fewer values in
    the reply (and FalkorDB's own time of it and of `leaves`).

    python benchmarks/placement_latency.py --keep /tmp/clusters --out /tmp/p.json 100000   # once
    python benchmarks/placement_reply_cost.py /tmp/clusters/100000 --runs 60

Works on a copy in a scratch folder beside the kept store; the kept one is never opened. Prints JSON.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import hiredis
from free_blocks_forms import captured_params
from kept_copy import kept_arguments, on_a_copy
from placement_store_state import BLOCKS_STATEMENT, STATEMENT, one_statement, one_statement_params

from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.falkordb_reply import parse_rows

GPU_LIST = """collect(CASE WHEN map_gpu IS NULL THEN null ELSE [
    map_gpu.uuid, map_gpu.state, map_gpu.health, map_gpu.temperature_c, map_gpu.utilization_pct,
    map_gpu.lease_expires_at, map_gpu.memory_used_mib,
    coalesce(map_gpu.nvlink_replay_errors, 0) + coalesce(map_gpu.nvlink_recovery_errors, 0)
      + coalesce(map_gpu.nvlink_crc_errors, 0),
    size(coalesce(map_gpu.xid_errors, []))
  ] END) AS map_gpus"""
GPU_STRING = """collect(CASE WHEN map_gpu IS NULL THEN null ELSE
    map_gpu.uuid + '|' + map_gpu.state + '|' + coalesce(map_gpu.health, '') + '|'
    + coalesce(toString(map_gpu.temperature_c), '') + '|' + coalesce(toString(map_gpu.utilization_pct), '') + '|'
    + coalesce(toString(map_gpu.lease_expires_at), '') + '|' + coalesce(toString(map_gpu.memory_used_mib), '') + '|'
    + toString(coalesce(map_gpu.nvlink_replay_errors, 0) + coalesce(map_gpu.nvlink_recovery_errors, 0)
      + coalesce(map_gpu.nvlink_crc_errors, 0)) + '|'
    + toString(size(coalesce(map_gpu.xid_errors, [])))
  END) AS map_gpus"""


def values_in(reply: Any) -> int:
    """How many values (every element, containers included) a reply holds."""
    return 1 + sum(values_in(x) for x in reply) if isinstance(reply, list) else 1


def server_ms(reply: list[Any]) -> float:
    """FalkorDB's own execution time, the reply's last statistic ("...: 6.3 milliseconds")."""
    return float(str(reply[-1][-1]).split(":")[1].split()[0])


def raw_reply(sock_path: Path, command: list[str]) -> bytes:
    """The reply's bytes, read from a socket of its own (RESP, as the client reads them)."""
    wire = b"*%d\r\n" % len(command) + b"".join(b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in command)
    reader, raw = hiredis.Reader(), b""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(sock_path))
        sock.sendall(wire)
        while True:
            chunk = sock.recv(1 << 20)
            raw += chunk
            reader.feed(chunk)
            if reader.gets() is not False:
                return raw


def median_ms(seconds: list[float]) -> float:
    return round(statistics.median(seconds[5:]) * 1000, 2)


async def measure(data: Path, runs: int) -> dict[str, Any]:
    settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300, stale_after_s=1e9)
    async with open_store(settings) as gw:
        captured = await captured_params(gw, Services(gw, settings))
        backend: Any = gw.backend
        graph = backend._database().select_graph(backend.graph_name)
        conn = backend._database().connection
        leaves = gw.registry[STATEMENT].falkordb_text
        blocks = gw.registry[BLOCKS_STATEMENT].falkordb_text
        inside = one_statement(gw.registry).falkordb_text
        headers = {
            STATEMENT: graph._build_params_header(dict(captured[STATEMENT])),
            BLOCKS_STATEMENT: graph._build_params_header(dict(captured[BLOCKS_STATEMENT])),
            "one": graph._build_params_header(one_statement_params(captured)),
        }

        async def command(header: str, statement: str) -> list[Any]:
            reply: list[Any] = await conn.execute_command(
                "GRAPH.RO_QUERY", backend.graph_name, header + statement, "--compact"
            )
            return reply

        walls, servers = [], []
        for _ in range(runs):
            t = time.perf_counter()
            reply = await command(headers[STATEMENT], leaves)
            walls.append(time.perf_counter() - t)
            servers.append(server_ms(reply) / 1000)
        raw = raw_reply(
            data / "falkordb.sock", ["GRAPH.RO_QUERY", backend.graph_name, headers[STATEMENT] + leaves, "--compact"]
        )
        hiredis_s, parse_s = [], []
        for _ in range(runs):
            t = time.perf_counter()
            reader = hiredis.Reader()
            reader.feed(raw)
            reader.gets()
            hiredis_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            parse_rows(reply)
            parse_s.append(time.perf_counter() - t)
        out: dict[str, Any] = {
            "reply": {
                "wall_ms": median_ms(walls),
                "server_ms": median_ms(servers),
                "bytes": len(raw),
                "values": values_in(reply),
                "hiredis_ms": median_ms(hiredis_s),
                "parse_rows_ms": median_ms(parse_s),
                "statement_bytes": len(headers[STATEMENT] + leaves),
            }
        }
        one_row = (parse_rows(await command(headers["one"], inside)) or [{}])[0]
        blocks_row = (parse_rows(await command(headers[BLOCKS_STATEMENT], blocks)) or [{}])[0]
        assert [one_row[k] for k in ("host_blocks", "domain_blocks")] == [
            blocks_row[k] for k in ("host_blocks", "domain_blocks")
        ], "the blocks beside read what the blocks inside read"
        assert GPU_LIST in leaves, "the host maps' GPU list is not where this script expects it"
        packed = leaves.replace(GPU_LIST, GPU_STRING)

        async def beside() -> None:
            await asyncio.gather(command(headers[STATEMENT], leaves), command(headers[BLOCKS_STATEMENT], blocks))

        async def one(header: str, statement: str) -> None:
            await command(header, statement)

        shapes: dict[str, Callable[[], Awaitable[None]]] = {
            "one_statement": lambda: one(headers["one"], inside),
            "beside": beside,
            "leaves": lambda: one(headers[STATEMENT], leaves),
            "leaves_packed": lambda: one(headers[STATEMENT], packed),
        }
        times: dict[str, list[float]] = {name: [] for name in shapes}
        server: dict[str, list[float]] = {"leaves": [], "leaves_packed": []}
        for _ in range(runs):
            for name, run in shapes.items():
                t = time.perf_counter()
                await run()
                times[name].append(time.perf_counter() - t)
            for name, statement in (("leaves", leaves), ("leaves_packed", packed)):
                server[name].append(server_ms(await command(headers[STATEMENT], statement)) / 1000)
        out["shapes_wall_ms"] = {name: median_ms(ts) for name, ts in times.items()}
        out["shapes_server_ms"] = {name: median_ms(ts) for name, ts in server.items()}
        out["packed_values"] = values_in(await command(headers[STATEMENT], packed))
    return out


def main() -> None:
    args = kept_arguments(__doc__.split("\n")[0], runs=60)
    result = on_a_copy(args.kept, "reply-scratch", lambda scratch: measure(scratch, args.runs))
    print(json.dumps({"statement": STATEMENT, "runs": args.runs, **result}, indent=1))


if __name__ == "__main__":
    main()
