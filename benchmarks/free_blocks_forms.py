"""Benchmark: placement's candidate statements in their seek and scan forms, quiet and after
sustained reservations (not a test).

The one-host and one-domain statements (`placement_hosts_fit`, `placement_domains_fit`) read the
cluster's largest free blocks by index seeks per free count and tie bucket
(`placement_free_blocks`), the domain and leaf statements their page of units by a free-count
seek (`placement_domain_page`, `placement_leaf_page`; since stop 56 the leaf statement has no
free blocks of its own, `placement_cluster_blocks` reads them beside it); each `_scan` form,
derived by the query registry, reads them by scans (`placement_free_blocks_scan`,
`placement_domain_page_scan`, `placement_leaf_page_scan`). The engine runs the scan form on
clusters of up to `SCAN_BLOCKS_UP_TO` hosts. This loads a cluster into a fresh embedded store in
process (optionally reserving a fraction of its GPUs at random), captures the parameters the
engine sends for three requests, and times both forms of each statement alternately on the same
store: the median wall time of the statement alone and the median sum of its `GRAPH.PROFILE`
operator times, and whether both forms return the same row. Then 16 tasks reserve and release
through the reservation service for `--churn` seconds (FalkorDB's free-count index entries go
stale with every write until its index garbage collector runs, every 30 s), and the same again.

    python benchmarks/free_blocks_forms.py superpod-h100:sus=1 --churn 25
    python benchmarks/free_blocks_forms.py superpod-h100:sus=16 --churn 25 --busy 0.5

`--baseline DIR` adds a third form: the scan form as this tree's registry derives it from another
tree's `queries/` folder (e.g. `git worktree add /tmp/old-tree <commit>`), timed in the same
alternation, so a change to a scan fragment is measured against the scan form before it on one
store. `--requests` replaces the three requests (a JSON object: request text -> statement).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphsvc.ingest.service import recount
from graphsvc.placement.engine import SCAN_BLOCKS_UP_TO
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import SCAN_SUFFIX, QueryRegistry
from graphsvc.synthetic.load import load_cluster

REQUESTS = {
    "8xH100 nvlink=full-mesh": "placement_domains_fit",
    "2xH100": "placement_hosts_fit",
    "32xH100 ib-hops<=1": "placement_leaves_fit",
}
_OP_TIME = re.compile(r"Execution time: ([\d.]+) ms")


def operator_times(profile: list[Any]) -> list[tuple[int, str, float]]:
    """A GRAPH.PROFILE reply's operators: (line, operator and its pattern, ms)."""
    times = []
    for i, line in enumerate(profile):
        text = line.decode() if isinstance(line, bytes) else str(line)
        found = _OP_TIME.search(text)
        if found:
            times.append((i, " ".join(part.strip() for part in text.split("|")[:-1]), float(found.group(1))))
    return times


def operator_ms(profile: list[Any]) -> float:
    """The sum of a GRAPH.PROFILE reply's operator times."""
    return sum(ms for _, _, ms in operator_times(profile))


async def captured_params(gw: Gateway, services: Services) -> dict[str, dict[str, object]]:
    """The parameters the engine sends to each request's candidate statement (its seek form), as a
    running engine sends them: after a first round, so the free blocks' probes start from the
    largest counts it has seen (`BlockTops`), not from the largest possible units."""
    engine = services.reservations.engine
    engine.scan_blocks_up_to = -1
    for text in REQUESTS:
        await engine.place(parse_request(text).validated())
    captured: dict[str, dict[str, object]] = {}
    read = gw.read

    async def spy(name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        captured[name] = dict(params or {})
        return await read(name, params)

    gw.read = spy  # type: ignore[method-assign]
    try:
        for text in REQUESTS:
            await engine.place(parse_request(text).validated())
    finally:
        gw.read = read  # type: ignore[method-assign]
        engine.scan_blocks_up_to = SCAN_BLOCKS_UP_TO
    return captured


async def measure(
    gw: Gateway,
    captured: dict[str, dict[str, object]],
    label: str,
    runs: int,
    baseline: QueryRegistry | None = None,
) -> list[dict[str, Any]]:
    graph = gw.backend._database().select_graph(gw.backend.graph_name)  # type: ignore[attr-defined]
    out = []
    for request, name in REQUESTS.items():
        texts = {}
        forms = {name: gw.registry[name], f"{name}{SCAN_SUFFIX}": gw.registry[f"{name}{SCAN_SUFFIX}"]}
        if baseline is not None:
            forms["baseline"] = baseline[f"{name}{SCAN_SUFFIX}"]
        for form, query in forms.items():
            params = {k: v for k, v in captured[name].items() if k in query.parameters}
            texts[form] = graph._build_params_header(params) + query.falkordb_text
        replies = {
            str((await graph.execute_command("GRAPH.QUERY", graph.name, t, "--compact"))[1]) for t in texts.values()
        }
        wall: dict[str, list[float]] = {form: [] for form in texts}
        for i in range(runs):
            for form, text in list(texts.items())[:: 1 if i % 2 == 0 else -1]:
                started = time.perf_counter()
                await graph.execute_command("GRAPH.QUERY", graph.name, text, "--compact")
                wall[form].append((time.perf_counter() - started) * 1000)
        ops = {
            form: statistics.median(
                [operator_ms(await graph.execute_command("GRAPH.PROFILE", graph.name, text)) for _ in range(3)]
            )
            for form, text in texts.items()
        }
        seek, scan = name, f"{name}{SCAN_SUFFIX}"
        row = {
            "when": label,
            "request": request,
            "seek_ms": round(statistics.median(wall[seek]), 2),
            "seek_operators_ms": round(ops[seek], 2),
            "scan_ms": round(statistics.median(wall[scan]), 2),
            "scan_operators_ms": round(ops[scan], 2),
            "same_reply": len(replies) == 1,
        }
        if "baseline" in texts:
            row["baseline_scan_ms"] = round(statistics.median(wall["baseline"]), 2)
            row["baseline_scan_operators_ms"] = round(ops["baseline"], 2)
        print(row, flush=True)
        out.append(row)
    return out


async def churn(services: Services, seconds: float) -> int:
    """16 tasks reserving 1-8 H100s (full mesh) and releasing them, for `seconds`: cycles done."""
    reservations = services.reservations
    stop = time.monotonic() + seconds
    cycles = 0

    async def worker(i: int) -> None:
        nonlocal cycles
        rng = random.Random(i)
        while time.monotonic() < stop:
            request = parse_request(f"{rng.choice([1, 2, 4, 8])}xH100 nvlink=full-mesh")
            out = await reservations.reserve(owner="bench", holder=f"c{i}", request=request, ttl_s=600)
            if isinstance(out, Reservation):
                await reservations.release(out.id)
                cycles += 1

    await asyncio.gather(*(worker(i) for i in range(16)))
    return cycles


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="a synthetic cluster, e.g. superpod-h100:sus=1")
    parser.add_argument("--churn", type=float, default=25.0, help="seconds of reservations (0: quiet only)")
    parser.add_argument("--busy", type=float, default=0.0, help="fraction of GPUs reserved first")
    parser.add_argument("--runs", type=int, default=25, help="timed runs of each form per statement")
    parser.add_argument("--baseline", type=Path, help="another tree's queries/ folder: its scan forms too")
    parser.add_argument("--requests", help='JSON: request text -> statement, e.g. {"2xH100": "placement_hosts_fit"}')
    args = parser.parse_args()
    if args.requests:
        REQUESTS.clear()
        REQUESTS.update(json.loads(args.requests))
    baseline = QueryRegistry(args.baseline) if args.baseline else None
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), appendfsync="no", stale_after_s=1e9)
    async with open_store(settings) as gw:
        cluster = await load_cluster(gw, args.profile)
        rng = random.Random(3)
        taken = [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < args.busy]
        for i in range(0, len(taken), 4000):
            await gw.write("set_gpu_state", {"uuids": taken[i : i + 4000], "state": "reserved"})
        names = [h.hostname for h in cluster.hosts]
        for i in range(0, len(names), 500):
            await recount(gw, names[i : i + 500])
        services = Services(gw, settings)
        captured = await captured_params(gw, services)
        await asyncio.sleep(35)  # past an index collection: what a store that was not just loaded costs
        await measure(gw, captured, "quiet", args.runs, baseline)
        if args.churn:
            print({"cycles": await churn(services, args.churn)}, flush=True)
            await measure(gw, captured, "after churn", args.runs, baseline)


if __name__ == "__main__":
    asyncio.run(main())
