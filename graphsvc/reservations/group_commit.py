"""Group commit: requests that arrive while a write is in flight go to the store together.

A reservation is one small statement, and on the embedded store each statement pays an fsync
(appendfsync always) and a round trip; sixteen clients each waiting for their own paid for
sixteen. Here the first request runs at once; every request arriving while that batch is in
the store queues, and the queue goes next as one statement (UNWIND, one transaction), each
request getting its own answer back. Nothing waits on a timer unless `window_s` is set, so
a lone request pays nothing extra and a busy service batches by itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class GroupCommit(Generic[T, R]):
    """Batches `submit` calls into calls of `run(items) -> results` (one result per item, in order)."""

    def __init__(
        self, run: Callable[[list[T]], Awaitable[list[R]]], *, max_batch: int = 32, window_s: float = 0.0
    ) -> None:
        self.run = run
        self.max_batch = max_batch
        self.window_s = window_s
        self.pending: list[tuple[T, asyncio.Future[R]]] = []
        self.runner: asyncio.Task[None] | None = None
        self.batches = 0  # statements sent, for the benchmarks and tests
        self.items = 0

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if self.runner is None or self.runner.done():
            self.runner = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        # Let the requests that are already runnable join the first batch too.
        await asyncio.sleep(self.window_s)
        while self.pending:
            batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch :]
            self.batches += 1
            self.items += len(batch)
            try:
                results = await self.run([item for item, _ in batch])
            except Exception as err:  # noqa: BLE001 - handed to every request of the batch, not swallowed
                for _, future in batch:
                    if not future.done():
                        future.set_exception(err)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
            if self.window_s:
                await asyncio.sleep(self.window_s)
