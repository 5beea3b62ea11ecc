"""Benchmark: the multi-host placement statement against the embedded store's state (not a test).

The same graph answers at different speeds depending on its history. This times the statement
a multi-host request ran until stop 56 (`placement_leaves_fit` with the cluster's free blocks
inside it, `one_statement`; since then the engine reads the blocks beside it), with the parameters
the placement engine sends (free_blocks_forms.captured_params), on a kept store from
`placement_latency.py --keep` in three states:

1. `kept`: the store as kept (at each start it replays its log's tail, the writes since the last
   rewrite of the log);
2. `compacted`: a copy whose log was rewritten whole (no tail) and reopened;
3. `churned`: that copy after `--churn` seconds of Host writes (16 hosts a statement, a free
   count down then up again, as reservations move them), then after 30 s and 60 s idle.

With `--parts`, the kept store's runs also time the statement's parts, taking turns run by run:
whole, without the cluster's free blocks, without the host maps, without either
(`statement_parts`).

For each, the statement's median wall time over 35 runs (after 5 untimed), and FalkorDB's own
per-operator profile (GRAPH.PROFILE, 10 runs) of the three slowest operators. States 1 and 2
take turns `--rounds` times, each in a process of its own, the first of the pair alternating.

    python benchmarks/placement_latency.py --keep /tmp/clusters --out /tmp/p.json 100000   # once
    python benchmarks/placement_store_state.py /tmp/clusters/100000 --rounds 4 --churn 20 --parts

Works on copies in a scratch folder beside the kept store (a fresh copy of it each round: a
store whose log outgrew 1 MiB is compacted when it stops); the kept one is never opened. Prints
JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from free_blocks_forms import REQUESTS, captured_params, operator_times
from kept_copy import copy_kept

from graphsvc.api.app import freeze_startup_heap
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.queries import NamedQuery, QueryRegistry, default_registry

REQUEST = "32xH100 ib-hops<=1"
STATEMENT = REQUESTS[REQUEST]  # placement_leaves_fit


BLOCKS_STATEMENT = "placement_cluster_blocks"


def _adhoc(text: str) -> NamedQuery:
    return NamedQuery("bench/adhoc", text, default_registry().root)


def one_statement(registry: QueryRegistry) -> NamedQuery:
    """The multi-host statement as it ran until stop 56, the cluster's free blocks inside it (since
    then the engine reads them beside it, BLOCKS_STATEMENT): the leaf statement's FalkorDB text with
    the blocks' subquery put back where it was. Its parameters: both statements'
    (`one_statement_params`)."""
    leaves, blocks = registry[STATEMENT].falkordb_text, registry[BLOCKS_STATEMENT].falkordb_text
    call = blocks[blocks.index("\nCALL {") + 1 : blocks.rindex("\nRETURN host_blocks, domain_blocks")]
    text = leaves.replace(
        "WITH [scanned, found] AS keep, [] AS host_blocks, [] AS domain_blocks,",
        call + "\nWITH host_blocks, domain_blocks, [scanned, found] AS keep,",
    ).replace(
        "RETURN keep[0] AS scanned, keep[1] AS found, hosts",
        "RETURN keep[0] AS scanned, keep[1] AS found, hosts, host_blocks, domain_blocks",
    )
    assert text.count("block_host:Host") == 4 and text.endswith("host_blocks, domain_blocks"), "the layout changed"
    return NamedQuery("bench/one_statement", text, registry.root)


def one_statement_params(captured: dict[str, dict[str, object]]) -> dict[str, object]:
    """`one_statement`'s parameters: the leaf statement's and the free blocks' as the engine sent them."""
    return {**captured[STATEMENT], **captured[BLOCKS_STATEMENT]}


def free_blocks_span(text: str) -> tuple[int, int]:
    """Where the statement's free-blocks subquery (fragment placement_free_blocks) starts and ends."""
    blocks_at = text.index("\nCALL {", text.index("CALL {\nWITH units") + 5) + 1
    return blocks_at, text.index("\nWITH host_blocks, domain_blocks, [scanned, found] AS keep")


def statement_parts(text: str) -> dict[str, str]:
    """The statement whole, without the cluster's free blocks, without the host maps, and without
    either (what is left: the leaf page and its members): each part's subquery replaced by the
    empty values the rest of the statement carries on with."""
    blocks_at, blocks_end = free_blocks_span(text)
    maps_end_line = "\nWITH keep, host_blocks, domain_blocks, hosts"

    def without_maps(t: str) -> str:
        at = t.index("\nCALL {", t.index("AS keep")) + 1
        end = t.index(maps_end_line)
        return t[:at] + "WITH keep, host_blocks, domain_blocks, [] AS hosts" + t[end + len(maps_end_line) :]

    no_blocks = (
        text[:blocks_at] + "WITH scanned, found, windows, [] AS host_blocks, [] AS domain_blocks" + text[blocks_end:]
    )
    return {
        "whole": text,
        "without_free_blocks": no_blocks,
        "without_host_maps": without_maps(text),
        "without_either": without_maps(no_blocks),
    }


async def time_parts(backend: Any, form: NamedQuery, params: dict[str, object]) -> dict[str, float]:
    """Each part's median over 35 runs (after 5), the parts taking turns run by run."""
    parts = {name: dataclasses.replace(form, text=text) for name, text in statement_parts(form.falkordb_text).items()}
    times: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(40):
        for name, query in parts.items():
            t = time.perf_counter()
            await backend.run(query, params, write=False, timeout_s=60)
            times[name].append((time.perf_counter() - t) * 1000)
    return {name: round(statistics.median(ts[5:]), 2) for name, ts in times.items()}


async def measure(
    data_dir: Path, *, compact_first: bool = False, churn_s: float = 0.0, parts: bool = False
) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, appendfsync="no", query_timeout_s=300, stale_after_s=1e9)
    out: dict[str, Any] = {}
    async with open_store(settings) as gw:
        backend: Any = gw.backend
        db = backend._database()
        if compact_first:
            await db.connection.execute_command("BGREWRITEAOF")
            for _ in range(3000):  # the rewrite runs in a child process (bounded polls)
                if "aof_rewrite_in_progress:1" not in str(await db.connection.execute_command("INFO", "persistence")):
                    break
                await asyncio.sleep(0.2)
            return {}
        freeze_startup_heap()
        params = one_statement_params(await captured_params(gw, Services(gw, settings)))
        form = one_statement(gw.registry)
        profiled = db.select_graph(backend.graph_name)._build_params_header(params) + form.falkordb_text

        async def state(tag: str) -> None:
            times = []
            for _ in range(40):
                t = time.perf_counter()
                await backend.run(form, params, write=False, timeout_s=60)
                times.append((time.perf_counter() - t) * 1000)
            ops: dict[tuple[int, str], float] = {}
            for _ in range(10):
                plan = await db.connection.execute_command("GRAPH.PROFILE", backend.graph_name, profiled)
                for i, name, ms in operator_times(plan):
                    ops[(i, name)] = ops.get((i, name), 0.0) + ms / 10
            slowest = sorted(ops.items(), key=lambda kv: -kv[1])[:3]
            out[tag] = {
                "p50_ms": round(statistics.median(times[5:]), 2),
                "profile_sum_ms": round(sum(ops.values()), 2),
                "slowest": [f"#{i} {name}: {ms:.2f} ms" for (i, name), ms in slowest],
            }

        await state("as_opened")
        if parts:
            out["parts"] = await time_parts(backend, form, params)
        if churn_s:
            names = [
                r["n"]
                for r in await backend.run(_adhoc("MATCH (h:Host) RETURN h.name AS n"), {}, write=False, timeout_s=300)
            ]
            rng, statements, started = random.Random(1), 0, time.monotonic()
            while time.monotonic() - started < churn_s:
                batch = rng.sample(names, 16)
                for step in (-1, 1):
                    await backend.run(
                        _adhoc("UNWIND $names AS n MATCH (h:Host {name: n}) SET h.free_gpus = h.free_gpus + $step"),
                        {"names": batch, "step": step}, write=True, timeout_s=60,
                    )  # fmt: skip
                    statements += 1
            out["churn"] = {"seconds": churn_s, "statements": statements, "host_writes": statements * 16}
            await state("churned")
            for idle in (30, 60):
                await asyncio.sleep(30)
                await state(f"churned_then_{idle}s_idle")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kept", type=Path, help="a kept store's folder (placement_latency.py --keep DIR SIZE)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--churn", type=float, default=20.0, help="seconds of Host writes on the compacted copy")
    parser.add_argument("--child", choices=["kept", "compacted", "churned", "compact"], help=argparse.SUPPRESS)
    parser.add_argument("--parts", action="store_true", help="also time the statement's parts on the kept store")
    args = parser.parse_args()
    if args.child:
        churn_s = args.churn if args.child == "churned" else 0.0
        parts = args.parts and args.child == "kept"
        result = asyncio.run(measure(args.kept, compact_first=args.child == "compact", churn_s=churn_s, parts=parts))
        print(json.dumps(result))
        return
    scratch = args.kept.with_name(args.kept.name + "-state-scratch")

    def child(kind: str, folder: Path) -> dict[str, Any]:
        line = subprocess.run(
            [sys.executable, __file__, str(folder), "--child", kind, "--churn", str(args.churn)]
            + (["--parts"] if args.parts else []),
            check=True, capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        result: dict[str, Any] = json.loads(line)
        return result

    def fresh_copy(source: Path, name: str) -> Path:
        return copy_kept(source, scratch / name)

    compacted = fresh_copy(args.kept, "compacted")
    child("compact", compacted)
    report: dict[str, Any] = {"request": REQUEST, "statement": STATEMENT, "rounds": []}
    for n in range(args.rounds):
        # A fresh copy of the kept store each round (a store whose log outgrew 1 MiB is compacted
        # when it stops), and the two take turns going first (the machine drifts within a round).
        pair = [("kept", fresh_copy(args.kept, "kept")), ("compacted", compacted)]
        report["rounds"].append({kind: child(kind, folder) for kind, folder in (pair if n % 2 == 0 else pair[::-1])})
    report["churned"] = child("churned", fresh_copy(compacted, "churned"))
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
