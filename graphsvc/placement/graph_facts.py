"""The GPU models in the graph and how many hosts it has: topology that changes with hardware,
read together and kept for a while, shared by every reader of one placement engine.

Two readers need them per request: the placement engine (its model prefilter, and which form of
a candidate statement to run, `PlacementEngine.fit_form`) and the reservation service's fast
path (the exact model names its one-host reserve matches, and which form of that reserve to
run, `fastpath.candidate_read`). Until stop 43 each kept its own copy, read by its own
statements on its own schedule (the engine every minute of its own clock, which a simulation
may run fast; the fast path every 10 s): up to three reads where one does.

A copy a refresh behind is never wrong, only slower: a model added since is matched by the
prefilter's substring test and misses the fast path (the general search answers it), and a
host count behind only picks the other of two forms that answer alike. A request naming a
model the copy lacks reads it again at once (`forget`), since the model may have just arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from graphsvc.store.gateway import Gateway

FACTS_TTL_S = 60.0  # how long the models and the host count are kept (real time, not a simulated clock)


class GraphFacts:
    def __init__(
        self, gateway: Gateway, *, ttl_s: float = FACTS_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.gw = gateway
        self.ttl_s = ttl_s
        self.clock = clock
        self.models: list[str] = []
        self.hosts = 0  # as last read (0 before the first read)
        self.read_at = float("-inf")
        self._reading: asyncio.Task[None] | None = None  # one read in flight, shared by every waiter

    async def fresh(self) -> GraphFacts:
        """These facts, read again first when older than `ttl_s`."""
        if self.clock() - self.read_at >= self.ttl_s:
            if self._reading is None or self._reading.done():
                self._reading = asyncio.create_task(self._read())
            await asyncio.shield(self._reading)
        return self

    def forget(self) -> None:
        """The next `fresh` reads the store (a request named a model these facts lack), not a read
        already in flight, which may have started before the model arrived."""
        self.read_at = float("-inf")
        self._reading = None

    async def _read(self) -> None:
        rows = await self.gw.read("placement_gpu_models", {})
        counted = await self.gw.read("reservations/host_count", {})
        self.models = [str(r["model"]) for r in rows if r.get("model")]
        self.hosts = int(counted[0]["hosts"]) if counted else 0
        self.read_at = self.clock()
