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
model the copy lacks reads it again for itself (`reread`), since the model may have just arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from graphsvc.store.gateway import Gateway

FACTS_TTL_S = 60.0  # how long the models and the host count are kept (real time, not a simulated clock)
REREAD_AFTER_S = 1.0  # a forced re-read within this long of the last read's start is not repeated


class GraphFacts:
    def __init__(
        self, gateway: Gateway, *, ttl_s: float = FACTS_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.gw = gateway
        self.ttl_s = ttl_s
        self.clock = clock
        self.models: list[str] = []
        self.hosts = 0  # as last read (0 before the first read)
        self.read_at = float("-inf")  # when the read these facts come from started
        self._reading: asyncio.Task[None] | None = None  # the newest read in flight, shared by its waiters
        self._reading_since = float("-inf")

    async def fresh(self) -> GraphFacts:
        """These facts, read again first when older than `ttl_s` (any read in flight will do)."""
        if self.clock() - self.read_at >= self.ttl_s:
            await self._read_since(float("-inf"))
        return self

    async def reread(self) -> GraphFacts:
        """These facts from a read that started now or later (a request named a model they lack,
        which may have just arrived), unless the last read started under REREAD_AFTER_S ago: a
        scheduler repeating an unknown model does not scan every GPU per request. Only this
        caller waits: every other reader keeps the facts as they are until the read lands."""
        now = self.clock()
        if now - self.read_at >= REREAD_AFTER_S:
            await self._read_since(now)
        return self

    async def _read_since(self, since: float) -> None:
        """Wait for a read that started at `since` or later, starting one if none is in flight."""
        task = self._reading
        if task is None or task.done() or self._reading_since < since:
            self._reading_since = self.clock()
            task = self._reading = asyncio.create_task(self._read(self._reading_since))
        await asyncio.shield(task)

    async def _read(self, started: float) -> None:
        rows = await self.gw.read("placement_gpu_models", {})
        counted = await self.gw.read("reservations/host_count", {})
        if started < self.read_at:
            return  # a read started later has landed first: an older one never overwrites it
        self.models = [str(r["model"]) for r in rows if r.get("model")]
        self.hosts = int(counted[0]["hosts"]) if counted else 0
        self.read_at = started
