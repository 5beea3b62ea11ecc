"""Group commit: requests that arrive while a write is in flight go to the store together.

A reservation is one small statement, and on the embedded store each statement pays an fsync
(appendfsync always) and a round trip; sixteen clients each waiting for their own paid for
sixteen. Here the first request runs at once; every request arriving while that batch is in
the store queues, and the queue goes next as one statement (UNWIND, one transaction), each
request getting its own answer back. Nothing waits on a timer unless `window_s` is set, so
a lone request pays nothing extra and a busy service batches by itself.

`max_in_flight` > 1 pipelines: up to that many batches are in the store at once, and requests
waiting when several batches start are shared out evenly between them. With one batch in flight
the service and the store take turns: sixteen clients in step all wait on one batch, the store
idles while the service answers them and reads their next requests, and the service idles while
the store works (measured: the store had a statement in flight 59% of the time). With two, one
half's statement runs while the service handles the other half. Only for a store that runs
writes one at a time (FalkorDB): there the second statement reads what the first committed.
Where writes run concurrently (Neo4j, read committed) two batches would read the same free GPUs
and the second would lose most of them to the first's locks, so the service keeps one there.

`distinct` keeps requests with the same key out of one batch (an UNWIND writing one host twice);
such a request waits for a later batch, in the order it came.

A batch that finds the store unreachable (`StoreUnavailableError`, raised or as every one of its
answers) fails the requests queued behind it with that same error, at once. Each would otherwise
pay a store attempt of its own only to hear the same thing (on Neo4j the driver retries an
unreachable server for `max_retry_s`): with the Neo4j server stopped, a lone request answered 503
after ~7 s and the requests queued behind it after 14-25 s, one more attempt each batch. Only
those already queued: a request arriving later asks the store again (it may be back), nothing
remembers the outage. A store that answered (`StoreBusyError`: deadlocks or lock waits still
failing after retries, or no free connection; a constraint, a bad statement, a timeout) says
nothing about other requests, so only the failing batch's own requests get its error, as before.
The backends retry what a retry may cure (Neo4j's transient errors and lost connections within
`max_retry_s`, a node deleted meanwhile, FalkorDB's early timeout of a read) inside one attempt,
so by the time a batch fails here its own retries are spent.

Used by reservations (reserve, release, idempotency-key reads) and by host fact ingest
(unchanged documents, `graphsvc.ingest.service`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from graphsvc.store.errors import StoreBusyError, StoreUnavailableError

T = TypeVar("T")
R = TypeVar("R")


def store_down(outcome: object) -> bool:
    """Whether `outcome` (an exception, or an answer carrying one) says the store could not be
    reached; not a busy store (`StoreBusyError`), which answered and may take the next batch."""
    return isinstance(outcome, StoreUnavailableError) and not isinstance(outcome, StoreBusyError)


class GroupCommit(Generic[T, R]):
    """Batches `submit` calls into calls of `run(items) -> results` (one result per item, in order)."""

    def __init__(
        self,
        run: Callable[[list[T]], Awaitable[list[R]]],
        *,
        max_batch: int = 32,
        window_s: float = 0.0,
        max_in_flight: int = 1,
        min_split: int = 8,
        distinct: Callable[[T], Hashable] | None = None,
    ) -> None:
        if max_in_flight < 1 or min_split < 1:
            raise ValueError("max_in_flight and min_split must be at least 1")
        self.run = run
        self.max_batch = max_batch
        self.window_s = window_s
        self.max_in_flight = max_in_flight
        # A batch that starts while another is in the store has at least this many requests:
        # a statement's fixed cost (parse, round trip, fsync) is worth paying for a few, not for
        # each straggler of a group that came back together.
        self.min_split = min_split
        self.distinct = distinct
        self.pending: list[tuple[T, asyncio.Future[R]]] = []
        self.runners = 0  # drain loops alive (in flight, or about to take)
        self.starting = 0  # of which started and not yet taken their first batch
        self.tasks: set[asyncio.Task[None]] = set()
        self.batches = 0  # statements sent, for the benchmarks and tests
        self.items = 0

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if self.runners == 0 or (
            self.runners < self.max_in_flight and len(self.pending) >= (self.starting + 1) * self.min_split
        ):
            self.runners += 1
            self.starting += 1
            task = asyncio.create_task(self._drain())
            self.tasks.add(task)  # a reference, so the loop cannot collect a running task
            task.add_done_callback(self.tasks.discard)
        return await future

    def _take(self) -> list[tuple[T, asyncio.Future[R]]]:
        # Share what waits evenly between this runner and those started but not yet taking, so
        # requests arriving together fill every free slot instead of one statement and idle slots.
        size = min(self.max_batch, -(-len(self.pending) // (self.starting + 1)))
        if self.distinct is None:
            batch, self.pending = self.pending[:size], self.pending[size:]
            return batch
        batch, later, keys = [], [], set()
        for entry in self.pending:
            key = self.distinct(entry[0])
            if len(batch) < size and key not in keys:
                keys.add(key)
                batch.append(entry)
            else:
                later.append(entry)
        self.pending = later
        return batch

    def _take_all_waiting(self) -> list[asyncio.Future[R]]:
        """Empty the queue (the store is down: see the module's docstring); the futures still awaited."""
        waiting, self.pending = self.pending, []
        return [future for _, future in waiting if not future.done()]

    async def _drain(self) -> None:
        try:
            try:
                # Let the requests that are already runnable join the first batch too.
                await asyncio.sleep(self.window_s)
            finally:
                self.starting -= 1
            batch = self._take()
            while batch:
                self.batches += 1
                self.items += len(batch)
                try:
                    results = await self.run([item for item, _ in batch])
                except Exception as err:  # noqa: BLE001 - handed to every request of the batch, not swallowed
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(err)
                    if store_down(err):
                        for future in self._take_all_waiting():
                            future.set_exception(err)
                except BaseException:  # cancelled (shutdown): no request waits forever
                    for _, future in batch:
                        future.cancel()
                    if self.runners == 1:  # none left to take what waits
                        for _, future in self.pending:
                            future.cancel()
                        self.pending = []
                    raise
                else:
                    for (_, future), result in zip(batch, results, strict=True):
                        if not future.done():
                            future.set_result(result)
                    # Every statement of the batch failed to reach the store (a batch that answers
                    # each request apart, as reserves do): what waits gets the first such answer.
                    if results and all(store_down(result) for result in results):
                        for future in self._take_all_waiting():
                            future.set_result(results[0])
                if self.window_s and self.pending:
                    await asyncio.sleep(self.window_s)
                # What waits goes to a runner about to take it, if any; else a few stragglers wait
                # for the batch still in flight (or for more to arrive) rather than go alone; the
                # last runner takes whatever waits.
                if self.starting:
                    break
                last = self.runners == 1
                batch = self._take() if last or len(self.pending) >= self.min_split else []
        finally:
            self.runners -= 1
