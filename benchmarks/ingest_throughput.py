"""Benchmark: host fact documents/s with 16 concurrent collectors (not a test: it only measures).

A synthetic cluster's host documents (full facts, as `topo-collector run` sends them) are sent
by 16 concurrent collectors, in two phases on a fresh store:
- first ingest: every host is new (the graph grows: Rack, Host, GPUs, NICs, links, domains);
- steady state: every host sends its facts again with a newer `collected_at` (what collectors
  do every `--interval`), several rounds.
Each document goes through the REST route (`PUT /v1/hosts/{name}/facts`, in-process over ASGI:
JSON parsing, pydantic validation, the service, the store) and is one statement
(`ingest_host`, #15). Where the time goes is measured in the same run: the pydantic validation
and the flattening into parameters (`host_params`) per document on the client's CPU, and the
store round trip of `ingest_host` (the gateway's per-query statistics).

    python benchmarks/ingest_throughput.py                     # embedded FalkorDB
    python benchmarks/ingest_throughput.py --neo4j             # and the local Neo4j, same run

Writes docs/benchmarks/ingest.json (`--out` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from topo_facts import HostFacts

from graphsvc.api.app import create_app, freeze_startup_heap
from graphsvc.ingest.host_plan import host_params
from graphsvc.ingest.service import ingest_host
from graphsvc.services import Services
from graphsvc.settings import Settings
from graphsvc.store.factory import open_store
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build

ROOT = Path(__file__).resolve().parents[1]
COLLECTORS = 16


def documents(profile: str, round_: int, *, live_state: bool = True) -> list[tuple[str, bytes]]:
    """Every host's facts as its collector would send them in this round (JSON bodies).

    With `live_state` each round's GPUs report another temperature, power, utilization and
    memory in use, as busy GPUs do from one collection to the next; without it only
    `collected_at` changes (the documents of stops 28-46)."""
    at = datetime.now(UTC) - timedelta(seconds=600) + timedelta(seconds=round_)
    out = []
    for h in build(profile).hosts:
        update: dict[str, Any] = {"collected_at": at}
        if live_state and round_ > 0:
            rng = random.Random(f"{h.hostname}/{round_}")
            update["gpus"] = [
                g.model_copy(
                    update={
                        "temperature_c": round(rng.uniform(30.0, 85.0), 1),
                        "power_w": round(rng.uniform(70.0, 700.0), 3),
                        "utilization_pct": round(rng.uniform(0.0, 100.0), 1),
                        "memory_used_mib": rng.randrange(0, 80_000),
                    }
                )
                for g in h.gpus
            ]
        out.append((h.hostname, h.model_copy(update=update).model_dump_json().encode()))
    return out


CPU: list[float] = []  # this process's CPU seconds per call of send_all/send_service
STORE_CPU: list[float] = []  # the embedded redis-server's CPU seconds, same calls
STORE_DIR: list[Path] = []


def store_cpu_s() -> float:
    """utime + stime of the embedded redis-server (its pid file), 0.0 for Neo4j (not measured)."""
    for pid_file in STORE_DIR[0].rglob("*.pid") if STORE_DIR else []:
        try:
            fields = Path(f"/proc/{int(pid_file.read_text().strip())}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


async def send_all(client: httpx.AsyncClient, docs: list[tuple[str, bytes]]) -> tuple[float, list[float]]:
    queue = list(reversed(docs))
    latencies: list[float] = []

    async def collector() -> None:
        while queue:
            host, body = queue.pop()
            t = time.perf_counter()
            resp = await client.put(
                f"/v1/hosts/{host}/facts", content=body, headers={"content-type": "application/json"}
            )
            latencies.append((time.perf_counter() - t) * 1000)
            assert resp.status_code == 200 and resp.json()["applied"], resp.text

    cpu, store = time.process_time(), store_cpu_s()
    started = time.perf_counter()
    await asyncio.gather(*(collector() for _ in range(COLLECTORS)))
    CPU.append(time.process_time() - cpu)
    STORE_CPU.append(store_cpu_s() - store)
    return time.perf_counter() - started, latencies


async def send_service(services: Services | Gateway, docs: list[tuple[str, bytes]]) -> tuple[float, list[float]]:
    """The same documents straight into the application service (no HTTP, already validated);
    given a bare gateway, every document is the full `ingest_host` statement (no fingerprint
    cache: the path before #15's unchanged-topology statements)."""
    queue = [HostFacts.model_validate_json(body) for _, body in reversed(docs)]
    latencies: list[float] = []

    async def collector() -> None:
        while queue:
            facts = queue.pop()
            t = time.perf_counter()
            if isinstance(services, Gateway):
                assert (await ingest_host(services, facts)).applied
            else:
                assert (await services.ingest_host(facts)).applied
            latencies.append((time.perf_counter() - t) * 1000)

    cpu, store = time.process_time(), store_cpu_s()
    started = time.perf_counter()
    await asyncio.gather(*(collector() for _ in range(COLLECTORS)))
    CPU.append(time.process_time() - cpu)
    STORE_CPU.append(store_cpu_s() - store)
    return time.perf_counter() - started, latencies


def client_cpu_ms(docs: list[tuple[str, bytes]]) -> dict[str, float]:
    """Per document, on this process's CPU: pydantic validation, then flattening to parameters."""
    sample = docs[: min(len(docs), 64)]
    t = time.process_time()
    parsed = [HostFacts.model_validate_json(body) for _, body in sample]
    validate = (time.process_time() - t) / len(sample)
    t = time.process_time()
    for facts in parsed:
        host_params(facts, received_at=0.0)
    plan = (time.process_time() - t) / len(sample)
    return {"validate_ms": round(validate * 1000, 3), "host_params_ms": round(plan * 1000, 3)}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def statements(gw: Gateway) -> dict[str, dict[str, float]]:
    return {
        name: {"calls": s.calls, "mean_ms": round(s.total_s / s.calls * 1000, 2)}
        for name, s in sorted(gw.stats.items())
        if s.calls
    }


Phase = tuple[float, list[float], dict[str, dict[str, float]], float, float]


async def phase(
    gw: Gateway,
    send: Callable[[list[tuple[str, bytes]]], Awaitable[tuple[float, list[float]]]],
    profile: str,
    rounds: range,
) -> Phase:
    """One steady-state phase: every round's documents through `send`; the seconds, latencies,
    statement stats and process/store CPU per document (one function, not three copies)."""
    gw.stats.clear()
    total_s, lat_all = 0.0, []
    for r in rounds:
        s, lat = await send(documents(profile, r))
        total_s += s
        lat_all += lat
    n = len(rounds)
    return total_s, lat_all, statements(gw), sum(CPU[-n:]) / len(lat_all), sum(STORE_CPU[-n:]) / len(lat_all)


async def measure(kind: str, settings: Settings, profile: str, rounds: int) -> dict[str, Any]:
    STORE_DIR[:] = [settings.data_dir] if kind.startswith("embedded") else []
    async with open_store(settings) as gw:
        app = create_app(settings.model_copy(update={"insecure_dev": True}), gateway=gw)
        freeze_startup_heap()  # as the server does once started (graphsvc.api.app)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://b", timeout=300) as client:
            docs = documents(profile, 0)
            gw.stats.clear()
            first_s, first_lat = await send_all(client, docs)
            first_stats = statements(gw)
            first_store = STORE_CPU[-1] / len(docs)
            steady_s, steady_lat, steady_stats, steady_cpu, steady_store = await phase(
                gw, lambda d: send_all(client, d), profile, range(1, rounds + 1)
            )
            # The same steady state without HTTP: what the service and the store cost alone.
            services = Services(gw, settings)
            await send_service(services, documents(profile, rounds + 1))  # its fingerprint cache fills
            svc_s, svc_lat, svc_stats, svc_cpu, svc_store = await phase(
                gw, lambda d: send_service(services, d), profile, range(rounds + 2, 2 * rounds + 2)
            )
            full_s, full_lat, full_stats, full_cpu, full_store = await phase(
                gw, lambda d: send_service(gw, d), profile, range(2 * rounds + 2, 3 * rounds + 2)
            )
        result = {
            "store": kind,
            "hosts": len(docs),
            "gpus": build(profile).gpu_count,
            "first_ingest": {
                "docs_per_s": round(len(docs) / first_s, 1),
                "p50_ms": round(statistics.median(first_lat), 1),
                "p99_ms": round(pct(first_lat, 0.99), 1),
                "statements": first_stats,
                "store_cpu_ms_per_doc": round(first_store * 1000, 2),
            },
            "steady_state": {
                "documents": len(steady_lat),
                "docs_per_s": round(len(steady_lat) / steady_s, 1),
                "p50_ms": round(statistics.median(steady_lat), 1),
                "p99_ms": round(pct(steady_lat, 0.99), 1),
                "statements": steady_stats,
                "statements_per_doc": round(sum(v["calls"] for v in steady_stats.values()) / len(steady_lat), 2),
                "service_process_cpu_ms_per_doc": round(steady_cpu * 1000, 2),
                "store_cpu_ms_per_doc": round(steady_store * 1000, 2),
            },
            "steady_state_without_http": {
                "documents": len(svc_lat),
                "docs_per_s": round(len(svc_lat) / svc_s, 1),
                "p50_ms": round(statistics.median(svc_lat), 1),
                "p99_ms": round(pct(svc_lat, 0.99), 1),
                "statements": svc_stats,
                "service_process_cpu_ms_per_doc": round(svc_cpu * 1000, 2),
                "store_cpu_ms_per_doc": round(svc_store * 1000, 2),
            },
            "steady_state_full_statement_each_doc": {
                "documents": len(full_lat),
                "docs_per_s": round(len(full_lat) / full_s, 1),
                "p50_ms": round(statistics.median(full_lat), 1),
                "p99_ms": round(pct(full_lat, 0.99), 1),
                "statements": full_stats,
                "service_process_cpu_ms_per_doc": round(full_cpu * 1000, 2),
                "store_cpu_ms_per_doc": round(full_store * 1000, 2),
            },
            "client_cpu_per_doc": client_cpu_ms(docs),
        }
        print(json.dumps(result), file=sys.stderr)
        return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="superpod-h100:sus=4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--neo4j", action="store_true", help="also measure the local Neo4j (tools/neo4j-local)")
    parser.add_argument("--appendfsync", default="always", help="FalkorDB durability (production: always)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "ingest.json")
    # As in reservation_throughput.py: httpx's in-process transport imports sniffio on every
    # request; without it installed the failed import searched sys.path each time (~0.16 ms of
    # the collectors' CPU per document, in this same process). None fails it at once.
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    limits: dict[str, Any] = {"mutation_rate_per_minute": 1e9, "mutation_burst": 1_000_000, "query_timeout_s": 120}
    results = []
    try:
        settings = Settings(data_dir=data / "falkordb", appendfsync=args.appendfsync, **limits)
        results.append(await measure("embedded FalkorDB", settings, args.profile, args.rounds))
        if args.neo4j:
            from graphsvc.store.neo4j_local import LocalNeo4j

            neo = LocalNeo4j(data / "neo4j")
            neo.start()
            try:
                settings = Settings(store=neo.uri, neo4j_password=neo.password, data_dir=data / "unused", **limits)
                results.append(await measure("Neo4j 5.26 (local)", settings, args.profile, args.rounds))
            finally:
                neo.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    report = {"profile": args.profile, "collectors": COLLECTORS, "rounds": args.rounds, "results": results}
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
