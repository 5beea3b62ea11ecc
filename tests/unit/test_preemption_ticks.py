"""How releases and expiries wake the preemption ticks (GracefulPreemption.on_event), over a fake
tick: one tick at a time, each event answered by the first tick that starts after it, shared
with the events before it; a failing tick fails only its own events."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from graphsvc.reservations.events import Event
from graphsvc.reservations.preemption import GracefulPreemption


class Ticks:
    def __init__(self, fail_first: bool = False) -> None:
        self.started = 0
        self.gates: list[asyncio.Event] = []
        self.fail_first = fail_first

    async def tick(self) -> list[str]:
        self.started += 1
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()
        if self.fail_first and self.started == 1:
            raise RuntimeError("store down")
        return []


def preemption(ticks: Ticks) -> GracefulPreemption:
    out = GracefulPreemption(SimpleNamespace(gw=None))  # type: ignore[arg-type]
    out.tick = ticks.tick  # type: ignore[method-assign]
    return out


def released(rid: str) -> Event:
    return Event("reservation.released", rid, "h", 0.0)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_events_during_a_tick_share_the_next_one_and_each_waits_only_for_its_own() -> None:
    ticks = Ticks()
    p = preemption(ticks)
    first = asyncio.ensure_future(p.on_event(released("a")))
    await _settle()
    assert ticks.started == 1
    later = [asyncio.ensure_future(p.on_event(released(r))) for r in ("b", "c", "d")]
    await _settle()
    assert ticks.started == 1  # one at a time
    ticks.gates[0].set()
    await _settle()
    assert first.done() and not any(f.done() for f in later)  # "a" waited for its tick only
    assert ticks.started == 2  # b, c and d share the tick that started after them
    ticks.gates[1].set()
    await asyncio.gather(*later)
    await _settle()
    assert ticks.started == 2


async def test_a_failing_tick_fails_its_own_events_and_the_next_tick_still_runs() -> None:
    ticks = Ticks(fail_first=True)
    p = preemption(ticks)
    first = asyncio.ensure_future(p.on_event(released("a")))
    await _settle()
    second = asyncio.ensure_future(p.on_event(released("b")))
    await _settle()
    ticks.gates[0].set()
    await _settle()
    with pytest.raises(RuntimeError, match="store down"):
        await first
    assert ticks.started == 2
    ticks.gates[1].set()
    await second


async def test_other_events_start_no_tick() -> None:
    ticks = Ticks()
    p = preemption(ticks)
    await p.on_event(Event("reservation.created", "a", "h", 0.0))
    await p.on_event(Event("reservation.renewed", "a", "h", 0.0))
    await p.on_event(Event("reservation.released", "a", "h", 0.0, awaited=False))  # no preemption named it
    assert ticks.started == 0
