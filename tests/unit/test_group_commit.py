"""Group commit batching, over a fake store call: batches form while one is in flight, every
request gets its own result or the batch's error."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.reservations.group_commit import GroupCommit


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
