"""`graphsvc bench placement`: one cluster, one trace, several policies, side by side."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from graphsvc.bench.replay import Replay, alibaba_jobs, llm_jobs, snapshot
from graphsvc.settings import Settings

POLICIES = ["service", "first-fit", "slurm-tree", "kueue-bestfit"]


@asynccontextmanager
async def service_for(profile: str, server: str | None) -> AsyncIterator[httpx.AsyncClient]:
    """A client on `server`, or on a fresh in-process service loaded with `profile`."""
    if server:
        async with httpx.AsyncClient(base_url=server, timeout=120) as client:
            yield client
        return
    from graphsvc.api.app import create_app
    from graphsvc.ingest.service import ingest_fabric, ingest_host
    from graphsvc.store.factory import open_store
    from graphsvc.synthetic.clusters import build

    data = Path(tempfile.mkdtemp(prefix="graphsvc-replay-"))
    try:
        settings = Settings(data_dir=data, appendfsync="no", insecure_dev=True, mutation_rate_per_minute=1e9,
                            mutation_burst=10**9, query_timeout_s=120)  # fmt: skip
        async with open_store(settings) as gw:
            cluster = build(profile)
            for host in cluster.hosts:
                await ingest_host(gw, host)
            await ingest_fabric(gw, cluster.fabric())
            app = create_app(settings, gateway=gw)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://replay", timeout=120) as client:
                yield client
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def bench(
    profile: str,
    trace: str,
    policies: list[str],
    jobs: int,
    seed: int,
    server: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    # Checked before a store starts: a typo should cost a second, not a cluster load.
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policy {', '.join(unknown)}; known: {', '.join(POLICIES)}")
    if trace != "generated" and not Path(trace).is_file():  # noqa: ASYNC240 - once, before any awaiting
        raise ValueError(f"trace {trace!r} is not a file (give the Alibaba pods CSV or 'generated')")
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    async with service_for(profile, server) as client:
        topology, models = await snapshot(client)
        job_list = llm_jobs(jobs, seed, topology.total) if trace == "generated" else alibaba_jobs(Path(trace), jobs)
        replay = Replay(client, topology, models)
        results = []
        placements: dict[str, list[list[str]]] = {}
        for policy in policies:
            run = await replay.run(policy, job_list)
            results.append(run.summary())
            placements[policy] = [[str(j.job), str(j.gpus)] for j in run.jobs]
            if progress:
                print(f"  {profile} / {Path(trace).name} / {policy}: {results[-1]}", file=sys.stderr)
        return {"cluster": profile, "trace": Path(trace).name, "jobs": len(job_list), "results": results,
                "gpus": topology.total}  # fmt: skip
