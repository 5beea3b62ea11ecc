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


async def test_reread_reads_for_its_caller_only_and_not_twice_a_second() -> None:
    reads, now = Reads(), [0.0]
    f = facts(reads, now)
    await f.fresh()
    now[0] = 0.5
    await f.reread()  # the last read started under a second ago: no read
    assert len(reads.calls) == 2
    now[0] = 2.0
    reads.gate = asyncio.Event()
    rereading = asyncio.ensure_future(f.reread())
    await asyncio.sleep(0)
    assert (await f.fresh()).hosts == 31 and not rereading.done()  # other readers do not wait for it
    reads.hosts = 40
    reads.gate.set()
    assert (await rereading).hosts == 40 and f.read_at == 2.0
    assert len(reads.calls) == 4


async def test_a_reread_starts_after_a_read_in_flight_and_the_newer_facts_win() -> None:
    """A read that started before the reread's call may have missed what the caller looks for: the
    reread starts its own; and when the older read lands last, it does not overwrite the newer."""
    reads, now = Reads(), [100.0]
    f = facts(reads, now)
    old_gate = asyncio.Event()
    reads.gate = old_gate
    older = asyncio.ensure_future(f.fresh())  # the first read, held in flight
    await asyncio.sleep(0)
    now[0] = 102.0
    reads.gate = None  # the reread's own read goes straight through
    reads.hosts = 40
    assert (await f.reread()).hosts == 40
    old_gate.set()
    await older
    assert f.hosts == 40 and f.read_at == 102.0  # the older read landed last and was not kept
    assert reads.calls.count("placement_gpu_models") == 2
