"""Benchmark: what GraphQL and the REST fast path cost around the placement engine (not a test).

Two measurements on a copy of a kept store from `placement_latency.py --keep`, in process
(httpx's ASGI transport, as placement_latency.py asks), each request text in turn:

- `without_engine_ms`: the engine's answer to the request computed once and kept, so each
  request costs only the API around it: GraphQL `placementText` with the selection
  placement_latency.py sends (scores, GPU uuids and host names) and `POST /v1/place`, the mean
  over `--runs` requests each after a warm-up. Steady and repeatable: the way to compare two
  trees' API code (run it in each, in turn).
- `with_engine`: the same two requests taking turns with the real engine, the median of each
  and of its part outside `engine.place` (the API's share when the engine has just run: colder
  caches than the first measurement), and the collector's runs per request (each collects the
  young generation, whichever generations it takes too).

    python benchmarks/placement_latency.py --keep /tmp/clusters 100000   # once
    python benchmarks/api_overhead.py /tmp/clusters/100000 --runs 600

Works on a copy in a scratch folder beside the kept store; the kept one is never opened. Prints JSON.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from kept_copy import kept_arguments, on_a_copy
from placement_latency import QUERY

from graphsvc.api.app import create_app, freeze_startup_heap, thaw_startup_heap
from graphsvc.placement.request import parse_request
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store

REQUESTS = ("32xH100 ib-hops<=1", "32xH100 per-host=4 ib-hops<=1", "1xH100")
Ask = Callable[[], Awaitable[Any]]


def asks(client: httpx.AsyncClient, text: str) -> dict[str, Ask]:
    async def graphql() -> Any:
        answer = (await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})).json()
        assert answer["data"]["placementText"]["candidates"], answer
        return answer

    async def rest() -> Any:
        answer = (await client.post("/v1/place", json={"request": text})).json()
        assert answer["candidates"], answer
        return answer

    return {"graphql": graphql, "rest": rest}


async def without_engine(engine: Any, client: httpx.AsyncClient, text: str, runs: int) -> dict[str, float]:
    kept = await engine.place(parse_request(text).validated())

    async def answer(*_args: Any, **_kwargs: Any) -> Any:
        return kept

    engine.place = answer
    try:
        out = {}
        for api, ask in asks(client, text).items():
            for _ in range(20):
                await ask()
            started = time.perf_counter()
            for _ in range(runs):
                await ask()
            out[api] = round((time.perf_counter() - started) / runs * 1000, 3)
        return out
    finally:
        del engine.place  # the instance attribute goes; the method is the class's again


async def with_engine(engine: Any, client: httpx.AsyncClient, text: str, runs: int) -> dict[str, Any]:
    walls: dict[str, list[float]] = {"graphql": [], "rest": []}
    inside: dict[str, list[float]] = {"graphql": [], "rest": []}
    collections = {"graphql": 0, "rest": 0}
    current = ["graphql"]
    place = engine.place

    depth = [0]

    async def timed(*args: Any, **kwargs: Any) -> Any:
        # Only the request's own call is timed: one that calls place again (a search run once
        # more after lapsed leases are ended, the diagnosis) is inside it.
        depth[0] += 1
        started = time.perf_counter()
        try:
            return await place(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                inside[current[0]].append(time.perf_counter() - started)

    def count(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":  # every collection collects the young generation too
            collections[current[0]] += 1

    pairs = asks(client, text)
    for _ in range(10):
        for ask in pairs.values():
            await ask()
    engine.place = timed
    gc.callbacks.append(count)
    try:
        for _ in range(runs):
            for api, ask in pairs.items():
                current[0] = api
                started = time.perf_counter()
                await ask()
                walls[api].append(time.perf_counter() - started)
    finally:
        gc.callbacks.remove(count)
        del engine.place
    out: dict[str, Any] = {}
    for api in walls:
        outside = [w - e for w, e in zip(walls[api], inside[api], strict=True)]
        out[api] = {
            "p50_ms": round(statistics.median(walls[api]) * 1000, 2),
            "outside_engine_p50_ms": round(statistics.median(outside) * 1000, 2),
            "collections_per_request": round(collections[api] / runs, 2),
        }
    return out


async def measure(data: Path, runs: int) -> dict[str, Any]:
    settings = Settings(data_dir=data, appendfsync="no", query_timeout_s=300, stale_after_s=1e9, insecure_dev=True)
    async with open_store(settings) as gw:
        app = create_app(settings, gateway=gw)
        freeze_startup_heap()  # as the server does once started (graphsvc.api.app)
        try:
            engine = app.state.reservations.engine
            transport = httpx.ASGITransport(app=app)
            out: dict[str, Any] = {}
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=300) as client:
                for text in REQUESTS:
                    out[text] = {
                        "without_engine_ms": await without_engine(engine, client, text, runs),
                        "with_engine": await with_engine(engine, client, text, max(runs // 6, 20)),
                    }
                    print(f"  {text}: {out[text]}", file=sys.stderr)
            return out
        finally:
            thaw_startup_heap()


def main() -> None:
    args = kept_arguments(__doc__.split("\n")[0], runs=600)
    result = on_a_copy(args.kept, "api-scratch", lambda scratch: measure(scratch, args.runs))
    print(json.dumps({"runs": args.runs, "requests": result}, indent=1))


if __name__ == "__main__":
    main()
