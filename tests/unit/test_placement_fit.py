"""The Python side of the one-statement candidate queries: the store's prefilter values, the
leaf window, the free blocks (table tests, no store)."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.placement.engine import NO_LIMIT, both_reads, cover, gpu_filters, merge_blocks
from graphsvc.placement.model import BlockRow
from graphsvc.placement.request import parse_request
from graphsvc.placement.select import BUSY_MEMORY_MIB, BUSY_UTILIZATION_PCT
from graphsvc.store.backend import Row
from graphsvc.store.errors import StoreTimeoutError


@pytest.mark.parametrize(
    ("free", "n", "hosts"),
    [
        ([8, 8, 4], 16, 2),
        ([8, 8, 4], 17, 3),
        ([8, 8, 4], 40, 3),  # never covered: every host
        ([7, 7, 6], 16, 3),
        ([], 4, 0),
        ([8], 0, 0),
    ],
)
def test_cover_counts_hosts_until_their_free_gpus_hold_the_request(free: list[int], n: int, hosts: int) -> None:
    assert cover(free, n) == hosts


@pytest.mark.parametrize(
    ("text", "rail_up", "expected"),
    [
        (
            "4xH100",
            False,
            {
                "healthy": True,
                "min_memory_mib": -1,
                "max_temperature_c": NO_LIMIT,
                "max_utilization_pct": NO_LIMIT,
                "max_memory_used_mib": NO_LIMIT,
                "nic_affinity": False,
                "rail_up": False,
                "plain": True,
            },
        ),
        (
            "4xH100 mem>=80 temp<=75 exclusive nic-affinity allow-unhealthy",
            True,
            {
                "healthy": False,
                "min_memory_mib": 80 * 1024,
                "max_temperature_c": 75,
                "max_utilization_pct": BUSY_UTILIZATION_PCT,
                "max_memory_used_mib": BUSY_MEMORY_MIB,
                "nic_affinity": True,
                "rail_up": True,
                "plain": False,
            },
        ),
    ],
)
def test_gpu_filters_carry_each_per_gpu_constraint(text: str, rail_up: bool, expected: dict[str, object]) -> None:
    assert gpu_filters(parse_request(text).validated(), rail_up=rail_up) == expected


def test_blocks_merge_largest_first_hosts_before_domains_on_ties_nulls_dropped() -> None:
    hosts: list[BlockRow] = [{"unit": "h1", "free": 8}, {"unit": "h2", "free": 4}]
    domains: list[BlockRow] = [{"unit": "d1", "free": 72}, {"unit": "d2", "free": 8}, {"unit": None, "free": None}]
    assert merge_blocks(hosts, domains) == [("d1", 72), ("h1", 8), ("d2", 8), ("h2", 4)]


async def test_both_reads_run_at_once() -> None:
    """The leaf statement and the free blocks are read at the same time: each read here waits
    until the other has started (one after the other, the first would wait for ever)."""
    started = [asyncio.Event(), asyncio.Event()]

    async def read(mine: int, rows: list[Row]) -> list[Row]:
        started[mine].set()
        await asyncio.wait_for(started[1 - mine].wait(), timeout=60)
        return rows

    assert await both_reads(read(0, [{"a": 1}]), read(1, [{"b": 2}])) == ([{"a": 1}], [{"b": 2}])


async def test_a_failed_read_is_raised_as_it_is_and_the_other_cancelled() -> None:
    """Its own type (the API maps a store error by it; an exception group would be a 500), once
    the other read was cancelled and collected (no "exception never retrieved" left behind)."""
    other_cancelled = asyncio.Event()

    async def slow() -> list[Row]:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            other_cancelled.set()
            raise
        return []

    async def fails() -> list[Row]:
        await asyncio.sleep(0)
        raise StoreTimeoutError("placement_cluster_blocks", "timed out")

    with pytest.raises(StoreTimeoutError):
        await both_reads(slow(), fails())
    assert other_cancelled.is_set()
