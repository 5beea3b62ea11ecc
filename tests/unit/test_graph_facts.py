"""GraphFacts (graphsvc.placement.graph_facts): the models and host count read together, at most
once per TTL however many readers ask at once, and again at once after `forget`; over a fake
gateway that counts its reads (the statements themselves run on both stores in test_queries_run)."""

from __future__ import annotations

import asyncio
from typing import Any

from graphsvc.placement.graph_facts import GraphFacts


class Reads:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.hosts = 31
        self.gate: asyncio.Event | None = None

    async def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls.append(name)
        if self.gate is not None:
            await self.gate.wait()
        if name == "placement_gpu_models":
            return [{"model": "NVIDIA H100 80GB HBM3"}, {"model": None}, {"model": "NVIDIA GB200"}]
        return [{"hosts": self.hosts}]


def facts(reads: Reads, now: list[float]) -> GraphFacts:
    return GraphFacts(reads, ttl_s=60.0, clock=lambda: now[0])  # type: ignore[arg-type]


async def test_one_read_of_both_serves_every_reader_until_the_ttl() -> None:
    reads, now = Reads(), [0.0]
    f = facts(reads, now)
    assert f.hosts == 0 and f.models == []  # nothing read yet
    got = await f.fresh()
    assert got.models == ["NVIDIA H100 80GB HBM3", "NVIDIA GB200"] and got.hosts == 31
    now[0] = 59.9
    reads.hosts = 40
    assert (await f.fresh()).hosts == 31  # kept
    assert reads.calls == ["placement_gpu_models", "reservations/host_count"]
    now[0] = 60.0
    assert (await f.fresh()).hosts == 40  # a minute on: read again
    assert len(reads.calls) == 4


async def test_concurrent_readers_share_the_read_in_flight() -> None:
    reads, now = Reads(), [0.0]
    f = facts(reads, now)
    reads.gate = asyncio.Event()
    waiting = [asyncio.ensure_future(f.fresh()) for _ in range(8)]
    await asyncio.sleep(0)
    reads.gate.set()
    assert all(r.hosts == 31 for r in await asyncio.gather(*waiting))
    assert reads.calls == ["placement_gpu_models", "reservations/host_count"]


async def test_forget_reads_again_not_the_read_in_flight() -> None:
    reads, now = Reads(), [0.0]
    f = facts(reads, now)
    await f.fresh()
    reads.gate = asyncio.Event()
    f.forget()
    first = asyncio.ensure_future(f.fresh())
    await asyncio.sleep(0)
    f.forget()  # a request named a model the read in flight may have missed
    second = asyncio.ensure_future(f.fresh())
    await asyncio.sleep(0)
    reads.gate.set()
    await asyncio.gather(first, second)
    assert reads.calls.count("placement_gpu_models") == 3  # the first read, the one in flight, its successor
