"""Group commit batching, over a fake store call: batches form while one is in flight, every
request gets its own result or the batch's error."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.store.errors import (
    StoreBusyError,
    StoreConstraintError,
    StoreQueryError,
    StoreTimeoutError,
    StoreUnavailableError,
)
from graphsvc.store.group_commit import GroupCommit


async def test_requests_arriving_during_a_batch_go_together_with_their_own_answers() -> None:
    seen: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        seen.append(items)
        await asyncio.sleep(0.01)
        return [i * 10 for i in items]

    group: GroupCommit[int, int] = GroupCommit(run, max_batch=4)
    results = await asyncio.gather(*(group.submit(i) for i in range(10)))
    assert results == [i * 10 for i in range(10)]
    assert [len(b) for b in seen] == [4, 4, 2]
    assert sorted(i for b in seen for i in b) == list(range(10))
    assert group.batches == 3 and group.items == 10


async def test_a_lone_request_is_sent_at_once() -> None:
    group: GroupCommit[int, int] = GroupCommit(lambda items: asyncio.sleep(0, [i + 1 for i in items]))
    assert await group.submit(1) == 2
    assert await group.submit(2) == 3
    assert group.batches == 2


async def test_a_failed_batch_fails_each_of_its_requests_and_the_next_batch_runs() -> None:
    calls = 0

    async def run(items: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("store down")
        return items

    group: GroupCommit[int, int] = GroupCommit(run, max_batch=2)
    outs = await asyncio.gather(*(group.submit(i) for i in range(4)), return_exceptions=True)
    assert [type(o) for o in outs[:2]] == [RuntimeError, RuntimeError]
    assert outs[2:] == [2, 3]
    with pytest.raises(RuntimeError):
        raise outs[0]  # type: ignore[misc]


class _Store:
    """A fake store call that records its batches and how many were in flight at once."""

    def __init__(self, fail: set[int] | None = None, error: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.in_flight = 0
        self.peak = 0
        self.fail = fail or set()
        self.error = error or RuntimeError("store down")
        self.gate = asyncio.Event()

    async def run(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.gate.wait()
            if self.fail & set(items):
                raise self.error
            return [i * 10 for i in items]
        finally:
            self.in_flight -= 1


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_two_in_flight_share_requests_arriving_together_evenly() -> None:
    store = _Store()
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=8)
    outs = asyncio.gather(*(group.submit(i) for i in range(16)))
    await _settle()
    assert [len(b) for b in store.batches] == [8, 8] and store.in_flight == 2  # both in the store at once
    store.gate.set()
    assert await outs == [i * 10 for i in range(16)]
    assert sorted(i for b in store.batches for i in b) == list(range(16))


async def test_one_in_flight_by_default_sends_everything_waiting_as_one_batch() -> None:
    store = _Store()
    group: GroupCommit[int, int] = GroupCommit(store.run)
    outs = asyncio.gather(*(group.submit(i) for i in range(16)))
    await _settle()
    assert [len(b) for b in store.batches] == [16]
    store.gate.set()
    assert await outs == [i * 10 for i in range(16)]
    assert store.peak == 1


async def test_a_group_smaller_than_two_splits_is_not_split() -> None:
    store = _Store()
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=8)
    outs = asyncio.gather(*(group.submit(i) for i in range(15)))
    await _settle()
    assert [len(b) for b in store.batches] == [15]
    store.gate.set()
    assert await outs == [i * 10 for i in range(15)]


async def test_stragglers_wait_for_the_batch_in_flight_instead_of_going_alone() -> None:
    store = _Store()
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=4)
    first = asyncio.gather(*(group.submit(i) for i in range(4)))
    await _settle()
    late = asyncio.gather(*(group.submit(i) for i in range(10, 13)))  # 3 < min_split: no second statement
    await _settle()
    assert [len(b) for b in store.batches] == [4]
    more = asyncio.ensure_future(group.submit(13))  # now 4 wait: they go beside the first
    await _settle()
    assert [sorted(b) for b in store.batches] == [[0, 1, 2, 3], [10, 11, 12, 13]] and store.in_flight == 2
    store.gate.set()
    assert await first == [0, 10, 20, 30] and await late == [100, 110, 120] and await more == 130
    assert group.runners == 0 and group.starting == 0 and not group.pending


async def test_the_last_runner_takes_stragglers_when_its_batch_ends() -> None:
    store = _Store()
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=4)
    first = asyncio.gather(*(group.submit(i) for i in range(4)))
    await _settle()
    late = asyncio.gather(*(group.submit(i) for i in range(10, 12)))
    await _settle()
    store.gate.set()
    assert await first == [0, 10, 20, 30] and await late == [100, 110]
    assert [sorted(b) for b in store.batches] == [[0, 1, 2, 3], [10, 11]]
    assert group.runners == 0 and not group.pending


async def test_a_failed_batch_in_flight_beside_another_fails_only_its_own_requests() -> None:
    store = _Store(fail={3})
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=4)
    outs = asyncio.gather(*(group.submit(i) for i in range(8)), return_exceptions=True)
    await _settle()
    assert store.in_flight == 2
    store.gate.set()
    results = await outs
    assert [type(r) for r in results[:4]] == [RuntimeError] * 4
    assert results[4:] == [40, 50, 60, 70]


def test_in_flight_and_split_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(lambda items: asyncio.sleep(0, items), max_in_flight=0)
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(lambda items: asyncio.sleep(0, items), min_split=0)


async def test_distinct_keys_keep_a_key_out_of_a_batch_that_has_it_in_arrival_order() -> None:
    seen: list[list[str]] = []

    async def run(items: list[str]) -> list[str]:
        seen.append(items)
        await asyncio.sleep(0.01)
        return [i.upper() for i in items]

    group: GroupCommit[str, str] = GroupCommit(run, max_batch=8, distinct=lambda item: item[0])
    items = ["a1", "b1", "a2", "c1", "a3", "b2"]
    assert await asyncio.gather(*(group.submit(i) for i in items)) == [i.upper() for i in items]
    assert seen == [["a1", "b1", "c1"], ["a2", "b2"], ["a3"]]
    assert all(len({i[0] for i in batch}) == len(batch) for batch in seen)


async def test_a_cancelled_last_runner_cancels_its_batch_and_what_waits_instead_of_leaving_them() -> None:
    started = asyncio.Event()

    async def run(items: list[int]) -> list[int]:
        started.set()
        await asyncio.sleep(60)
        return items

    group: GroupCommit[int, int] = GroupCommit(run, max_batch=2)  # one batch in flight, three waiting
    waiting = asyncio.gather(*(group.submit(i) for i in range(5)), return_exceptions=True)
    await started.wait()
    for task in list(group.tasks):
        task.cancel()  # as at shutdown
    outs = await asyncio.wait_for(waiting, 5)
    assert len(outs) == 5 and all(isinstance(o, asyncio.CancelledError) for o in outs)
    assert group.pending == [] and group.runners == 0


# ---- an outage: what waits behind a batch that found the store unreachable fails with it ----


async def _first_in_flight_then_queued(
    group: GroupCommit[int, int], store: _Store, queued: range
) -> tuple[asyncio.Future[tuple[int | BaseException]], asyncio.Future[list[int | BaseException]]]:
    """Request 0 in the store (held at the gate), then `queued` waiting behind it."""
    first = asyncio.gather(group.submit(0), return_exceptions=True)
    await _settle()
    assert store.batches == [[0]] and store.in_flight == 1
    behind = asyncio.gather(*(group.submit(i) for i in queued), return_exceptions=True)
    await _settle()
    assert [item for item, _ in group.pending] == list(queued) and len(store.batches) == 1
    return first, behind


async def test_requests_queued_behind_a_batch_that_found_the_store_unreachable_fail_with_it_at_once() -> None:
    down = StoreUnavailableError("Neo4j is unreachable: connection refused")
    store = _Store(fail={0}, error=down)
    group: GroupCommit[int, int] = GroupCommit(store.run)
    first, behind = await _first_in_flight_then_queued(group, store, range(1, 5))
    store.gate.set()
    [lone] = await first
    assert lone is down
    assert all(out is down for out in await behind)  # the first batch's error, as it is
    assert store.batches == [[0]] and group.batches == 1  # no second attempt for those that waited
    assert group.runners == 0 and not group.pending
    # Nothing remembers the outage: the next request asks the store (which may be back).
    store.fail = set()
    assert await group.submit(7) == 70
    assert store.batches == [[0], [7]]


async def test_a_batch_whose_every_answer_is_store_unavailable_fails_what_waits_with_that_answer() -> None:
    """Reserves carry a failed statement as their answer (ReservationService._write_moment; releases too), not
    as the batch's exception: every answer an outage is an outage too."""
    down = StoreUnavailableError("FalkorDB is unreachable: connection refused")
    gate = asyncio.Event()
    calls: list[list[int]] = []

    async def run(items: list[int]) -> list[int | StoreUnavailableError]:
        calls.append(items)
        await gate.wait()
        answers: list[int | StoreUnavailableError] = [down for _ in items] if len(calls) == 1 else list(items)
        return answers

    group: GroupCommit[int, int | StoreUnavailableError] = GroupCommit(run)
    first = asyncio.ensure_future(group.submit(0))
    await _settle()
    behind = asyncio.gather(*(group.submit(i) for i in range(1, 4)))
    await _settle()
    gate.set()
    assert await first is down
    assert all(out is down for out in await behind)
    assert calls == [[0]]
    assert await group.submit(9) == 9  # and the next one tries again


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param(["down", 1], id="one-statement-of-the-batch-reached-the-store"),
        pytest.param(["down", None], id="a-statement-that-took-nothing"),
        pytest.param(["busy", "busy"], id="store-busy"),
    ],
)
async def test_a_batch_with_an_answer_from_the_store_leaves_what_waits_to_its_own_attempt(
    answers: list[str | int | None],
) -> None:
    kinds = {"down": StoreUnavailableError("unreachable"), "busy": StoreBusyError("busy after retries")}
    gate = asyncio.Event()
    calls: list[list[int]] = []

    async def run(items: list[int]) -> list[object]:
        calls.append(items)
        await gate.wait()
        if len(calls) == 1:
            return [kinds[a] if isinstance(a, str) else a for a in answers]
        return list(items)

    group: GroupCommit[int, object] = GroupCommit(run)
    first = asyncio.gather(group.submit(0), group.submit(1))
    await _settle()
    behind = asyncio.gather(*(group.submit(i) for i in range(2, 5)))
    await _settle()
    gate.set()
    await first
    assert await behind == [2, 3, 4]
    assert calls == [[0, 1], [2, 3, 4]]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(StoreBusyError("Neo4j stayed busy (deadlock) after retries"), id="busy-after-retries"),
        pytest.param(StoreConstraintError("q", "an idempotency key raced"), id="constraint"),
        pytest.param(StoreQueryError("q", "bad request"), id="query"),
        pytest.param(StoreTimeoutError("q", "timed out"), id="timeout"),
        pytest.param(RuntimeError("a bug"), id="other"),
    ],
)
async def test_a_batch_failing_otherwise_fails_only_its_own_requests(error: Exception) -> None:
    """A store that answered (a deadlock a retry may cure, a constraint, a bad statement) says
    nothing about the requests that wait: they get their own attempt, as before."""
    store = _Store(fail={0}, error=error)
    group: GroupCommit[int, int] = GroupCommit(store.run)
    first, behind = await _first_in_flight_then_queued(group, store, range(1, 5))
    store.gate.set()
    assert (await first)[0] is error
    assert await behind == [10, 20, 30, 40]
    assert store.batches == [[0], [1, 2, 3, 4]]


async def test_an_outage_leaves_a_batch_already_in_the_store_beside_it_to_its_own_answer() -> None:
    """Two in flight (FalkorDB): the batch beside the failing one is already in the store and
    answers for itself; what waits behind both fails with the outage."""
    down = StoreUnavailableError("unreachable")
    store = _Store(fail={3}, error=down)
    group: GroupCommit[int, int] = GroupCommit(store.run, max_in_flight=2, min_split=4)
    both = asyncio.gather(*(group.submit(i) for i in range(8)), return_exceptions=True)
    await _settle()
    assert store.in_flight == 2
    behind = asyncio.gather(*(group.submit(i) for i in range(10, 13)), return_exceptions=True)
    await _settle()
    assert len(group.pending) == 3
    store.gate.set()
    results = await both
    assert all(r is down for r in results[:4])
    assert results[4:] == [40, 50, 60, 70]
    assert all(r is down for r in await behind)
    assert len(store.batches) == 2 and group.runners == 0 and not group.pending


async def test_a_request_waiting_for_its_key_behind_a_failed_batch_fails_with_it() -> None:
    down = StoreUnavailableError("unreachable")
    gate = asyncio.Event()
    calls: list[list[str]] = []

    async def run(items: list[str]) -> list[str]:
        calls.append(items)
        await gate.wait()
        raise down

    group: GroupCommit[str, str] = GroupCommit(run, distinct=lambda item: item[0])
    outs = asyncio.gather(*(group.submit(i) for i in ["a1", "b1", "a2"]), return_exceptions=True)
    await _settle()
    assert calls == [["a1", "b1"]] and [item for item, _ in group.pending] == ["a2"]
    gate.set()
    assert all(out is down for out in await outs)
    assert calls == [["a1", "b1"]]
