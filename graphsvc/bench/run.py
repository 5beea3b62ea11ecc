"""`graphsvc bench placement`: one cluster, one trace, several policies, side by side."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from graphsvc.bench.driver import Driver, InProcess, OverGraphQL
from graphsvc.bench.replay import Replay, snapshot
from graphsvc.bench.stats import compare, spread
from graphsvc.bench.traces import Job, alibaba_jobs, llm_jobs, shaped_jobs, trace_stats
from graphsvc.settings import Settings
from graphsvc.synthetic.load import load_cluster

POLICIES = ["service", "first-fit", "slurm-tree", "kueue-bestfit"]  # every replay knows these
REPLAY_POLICIES = ["service", "lookahead", *POLICIES[1:]]  # the placement replay adds lookahead
SHAPED_LOAD = 0.8  # offered load of a shaped trace unless told
SHAPED_LARGE = 0.5  # share of its GPU-hours in 8-512 GPU jobs unless told


@asynccontextmanager
async def service_for(profile: str, server: str | None) -> AsyncIterator[httpx.AsyncClient]:
    """A client on `server`, or on a fresh in-process service loaded with `profile`."""
    async with driver_for(profile, server) as (client, _driver):
        yield client


@asynccontextmanager
async def driver_for(profile: str, server: str | None) -> AsyncIterator[tuple[httpx.AsyncClient, Driver]]:
    """A client and a driver on `server`, or on a fresh in-process service loaded with `profile`."""
    if server:
        async with httpx.AsyncClient(base_url=server, timeout=120) as client:
            yield client, OverGraphQL(client)
        return
    from graphsvc.api.app import create_app
    from graphsvc.store.factory import open_store

    data = Path(tempfile.mkdtemp(prefix="graphsvc-replay-"))
    try:
        settings = Settings(data_dir=data, appendfsync="no", insecure_dev=True, mutation_rate_per_minute=1e9,
                            mutation_burst=10**9, query_timeout_s=120)  # fmt: skip
        async with open_store(settings) as gw:
            await load_cluster(gw, profile)
            app = create_app(settings, gateway=gw)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://replay", timeout=120) as client:
                yield client, InProcess(gw)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def parse_trace(trace: str) -> tuple[str, dict[str, float]]:
    """'generated', 'shaped[:load=0.8,large=0.5]', or a path to the Alibaba pods CSV."""
    kind, _, rest = trace.partition(":")
    if kind == "shaped":
        params = {"load": SHAPED_LOAD, "large": SHAPED_LARGE}
        for part in filter(None, rest.split(",")):
            key, eq, value = part.partition("=")
            if not eq or key not in params:
                raise ValueError(f"shaped trace option {part!r}: expected load=<0..> or large=<0..1>")
            params[key] = float(value)
        return "shaped", params
    if trace == "generated":
        return "generated", {}
    if not Path(trace).is_file():
        raise ValueError(f"trace {trace!r} is not a file (give the Alibaba pods CSV, 'generated' or 'shaped')")
    return "alibaba", {}


def make_jobs(trace: str, count: int, seed: int, index: int, gpus: int) -> list[Job]:
    """The trace of one seed: a fresh draw, or the index-th window of the real trace."""
    kind, params = parse_trace(trace)
    if kind == "generated":
        return llm_jobs(count, seed, gpus)
    if kind == "shaped":
        return shaped_jobs(count, seed, gpus, load=params["load"], large_share=params["large"])
    return alibaba_jobs(Path(trace), count, window=index)


METRICS = [
    # (key, higher is better, digits)
    ("mean_bottleneck_gbps", True, 1),
    ("local_share", True, 3),
    ("mean_comm_slowdown", False, 2),
    ("mean_ib_hops", False, 2),
    ("mean_queue_delay_s", False, 0),
    ("p95_queue_delay_s", False, 0),
    ("utilization", True, 3),
    ("largest_free_block_mean", True, 1),
    ("decisions_per_s", True, 1),
]
BASELINE = "kueue-bestfit"  # the strongest baseline: leads are judged against it


def aggregate(per_seed: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per policy and metric: mean, min, max, 95% half-width; and the paired verdict against BASELINE."""
    out: dict[str, Any] = {"policies": {}, "vs_baseline": {}}
    for policy, runs in per_seed.items():
        cells = {}
        for key, _, _ in METRICS:
            # Seeds where no job qualifies (a real-trace window without multi-GPU pods) are left
            # out; the cell says over how many seeds it is.
            values = [float(r[key]) for r in runs if r[key] is not None]
            sp = spread(values)
            cells[key] = None if sp is None else {"mean": sp.mean, "min": sp.lo, "max": sp.hi, "half95": sp.half95,
                                                  "n": sp.n}  # fmt: skip
        out["policies"][policy] = cells
    base = per_seed.get(BASELINE)
    for policy, runs in per_seed.items():
        if base is None or policy == BASELINE:
            continue
        verdicts = {}
        for key, higher, digits in METRICS:
            if key == "decisions_per_s":
                continue
            pairs = [(r[key], b[key]) for r, b in zip(runs, base, strict=True) if None not in (r[key], b[key])]
            c = compare([float(a) for a, _ in pairs], [float(b) for _, b in pairs], higher_is_better=higher)
            if c is not None:
                d = c.diff
                verdicts[key] = {"verdict": c.verdict, "text": c.text(digits), "diff_mean": d.mean,
                                 "diff_half95": d.half95, "diff_min": d.lo, "diff_max": d.hi}  # fmt: skip
        out["vs_baseline"][policy] = verdicts
    return out


async def bench(
    profile: str,
    trace: str,
    policies: list[str],
    jobs: int,
    seeds: list[int],
    server: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every policy on the same jobs, for each seed; per-seed results and their aggregate."""
    # Checked before a store starts: a typo should cost a second, not a cluster load.
    unknown = [p for p in policies if p not in REPLAY_POLICIES]
    if unknown:
        raise ValueError(f"unknown policy {', '.join(unknown)}; known: {', '.join(REPLAY_POLICIES)}")
    parse_trace(trace)
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    if not seeds:
        raise ValueError("give at least one seed")
    async with driver_for(profile, server) as (client, driver):
        topology, models = await snapshot(client)
        replay = Replay(driver, topology, models)
        per_seed: dict[str, list[dict[str, Any]]] = {p: [] for p in policies}
        stats = []
        for index, seed in enumerate(seeds):
            job_list = make_jobs(trace, jobs, seed, index, topology.total)
            stats.append(asdict(trace_stats(job_list, topology.total)))
            for policy in policies:
                run = await replay.run(policy, job_list)
                per_seed[policy].append(run.summary())
                if progress:
                    r = per_seed[policy][-1]
                    print(f"  {profile} / {Path(trace).name} / seed {seed} / {policy}: "
                          f"{r['mean_bottleneck_gbps'] or 0:.1f} GB/s, slowdown {r['mean_comm_slowdown'] or 0:.2f}, "
                          f"wait {r['mean_queue_delay_s'] or 0:.0f} s, util {r['utilization']:.3f}",
                          file=sys.stderr)  # fmt: skip
        return {
            "cluster": profile,
            "trace": Path(trace).name,
            "jobs": jobs,
            "gpus": topology.total,
            "seeds": seeds,
            "trace_stats": stats,
            "per_seed": per_seed,
            **aggregate(per_seed),
        }
