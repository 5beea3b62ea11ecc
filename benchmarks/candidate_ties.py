"""Benchmark: what a single-host placement statement spends on its candidate page (not a test).

Loads the placement benchmark's cluster (`placement_latency.load`: a SuperPOD, half the GPUs
reserved at random, every 32nd host idle) into a fresh embedded store, asks each request once
through GraphQL to capture the parameters the engine sends to its one-statement candidate read
(`placement_domains_fit` or `placement_hosts_fit`), then times that statement alone, side by side
in rounds, in three forms:

- `statement`: the whole named statement, as the engine runs it;
- `page`: only its candidate page (the two passes, the best-fit sort, SKIP/LIMIT), counted;
- `page unsorted`: the same page without its ORDER BY, which LIMIT then stops early: what the page
  would cost if the units tied at the page's last free count were not all read to break the tie
  by name.

The gap between the last two is the price of the tie-break at this cluster size (since stop 35
the domain page reads only the tie buckets it reaches, `placement_domains_fit`). Ends with the
statement's `GRAPH.PROFILE`.

    python benchmarks/candidate_ties.py 100000 --runs 15 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from placement_latency import QUERY, load

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.backend import Row
from graphsvc.store.factory import open_store
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import NamedQuery

REQUESTS = {"4xH100 nvlink=full-mesh": "placement_domains_fit", "1xH100": "placement_hosts_fit"}


def forms(text: str) -> dict[str, str]:
    """The statement, its candidate page, and the page without its sort (module docstring)."""
    carry = text.index(" AS units")
    head = text[: text.rindex("\nWITH collect(", 0, carry) + 1]
    unit = "h" if "(h:Host)" in head else "d"
    unsorted = re.sub(r"ORDER BY (abs\(|tie_key)[^\n]*\n", "", head)
    return {
        "statement": text,
        "page": f"{head}RETURN count({unit}) AS n",
        "page unsorted": f"{unsorted}RETURN count({unit}) AS n",
    }


async def captured_params(gw: Gateway, settings: Settings) -> dict[str, dict[str, Any]]:
    """Each request's candidate statement parameters, as the engine sent them the third time."""
    seen: dict[str, dict[str, Any]] = {}
    read = gw.read

    async def spy(name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        if name in REQUESTS.values():
            seen[name] = dict(params or {})
        return await read(name, params)

    gw.read = spy  # type: ignore[method-assign]
    try:
        app = create_app(settings.model_copy(update={"insecure_dev": True, "stale_after_s": 1e9}), gateway=gw)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
            for text in list(REQUESTS) * 3:  # the third ask runs with the engine's warmed hints
                body = (await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})).json()
                assert "errors" not in body, body
    finally:
        gw.read = read  # type: ignore[method-assign]
    return seen


async def measure(gpus: int, runs: int, rounds: int) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-ties-"))
    try:
        settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300)
        async with open_store(settings) as gw:
            print(await load(gw, gpus), file=sys.stderr)
            backend = gw.backend
            assert isinstance(backend, FalkorBackend)
            for name, params in (await captured_params(gw, settings)).items():
                print(f"{name}: first_size {params['first_size']}, limit {params['limit']}")
                here = Path("benchmarks/candidate_ties.py")
                queries = {
                    label: NamedQuery(f"bench {label}", text, here)
                    for label, text in forms(gw.registry[name].falkordb_text).items()
                }
                for rnd in range(rounds):
                    for label, query in queries.items():
                        used = {k: params[k] for k in query.parameters}
                        ms = []
                        for _ in range(runs):
                            started = time.perf_counter()
                            await backend.run(query, used, write=False, timeout_s=60)
                            ms.append((time.perf_counter() - started) * 1000)
                        print(f"  round {rnd}: {label}: p50 {statistics.median(ms):.2f} ms")
                whole = queries["statement"]
                graph = backend._database().select_graph(backend.graph_name)
                plan = await graph.profile(whole.text, {k: params[k] for k in whole.parameters})
                print("\n".join(plan.plan))
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gpus", type=int, nargs="?", default=100000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(measure(args.gpus, args.runs, args.rounds))


if __name__ == "__main__":
    main()
