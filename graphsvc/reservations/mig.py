"""Reservations of MIG slices: the store side (take, read, renew, free), used by the service.

A slice reservation is a `Reservation` node like any other (the same lease, renewals,
idempotency, events) that holds slices through `HOLDS_SLICE` instead of GPUs through
`HOLDS`: it holds no GPU, so no free-GPU counter moves and no GPU query sees a slice.
Taking is one conditional statement (`reserve_mig_slices`: lock the slices by uuid, re-check
they are free, write); ending a reservation goes through the usual statements (they end a
reservation that holds no GPU) and then `free_mig_slices` clears the slices' marks. A slice
whose holder is not live already counts as free, so nothing depends on that second step
having run (a crash between the two leaves nothing held).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict, cast

from graphsvc.placement.mig import SliceCandidate
from graphsvc.reservations.rows import LeaseTerms, ReservationProps
from graphsvc.store.gateway import Gateway


@dataclass
class ReservedSlice:
    """A MIG slice a reservation holds; `held` is false once it lost it (taken over after a lapse)."""

    uuid: str
    profile: str
    gpu_instance_id: int | None
    memory_mib: int | None
    gpu: str
    gpu_index: int
    gpu_model: str
    host: str
    held: bool


class _SliceRow(TypedDict):
    uuid: str
    profile: str
    gpu_instance_id: int | None
    memory_mib: int | None
    gpu: str
    gpu_index: int
    gpu_model: str
    host: str
    held: bool


async def take(gw: Gateway, candidate: SliceCandidate, props: ReservationProps, now: float) -> bool:
    """One all-or-nothing write of this candidate's slices; False when one was taken meanwhile."""
    uuids = sorted(s.uuid for s in candidate.slices)
    rows = await gw.write("reservations/reserve_mig_slices", {"uuids": uuids, "props": props, "now": now})
    return bool(rows)


async def slices_of(gw: Gateway, ids: Sequence[str]) -> dict[str, list[ReservedSlice]]:
    """The slices of these reservations, by reservation id (hosts, GPUs, instance ids in order)."""
    if not ids:
        return {}
    rows = await gw.read("reservations/reservation_slices", {"ids": list(ids)})
    out: dict[str, list[ReservedSlice]] = {}
    for row in rows:
        out[str(row["reservation"])] = [
            ReservedSlice(
                uuid=s["uuid"],
                profile=s["profile"],
                gpu_instance_id=s["gpu_instance_id"],
                memory_mib=s["memory_mib"],
                gpu=s["gpu"],
                gpu_index=int(s["gpu_index"]),
                gpu_model=s["gpu_model"] or "",
                host=s["host"],
                held=bool(s["held"]),
            )
            for s in cast(list[_SliceRow], row["slices"])
        ]
    return out


async def renew(gw: Gateway, reservation_id: str, now: float, lease: LeaseTerms) -> bool:
    rows = await gw.write("reservations/renew_mig_slices", {"id": reservation_id, "now": now, **lease})
    return bool(rows)


async def free_ended(gw: Gateway, ids: Sequence[str]) -> int:
    """Clear the marks of the slices these (ended) reservations held; the number freed."""
    if not ids:
        return 0
    rows = await gw.write("reservations/free_mig_slices", {"ids": sorted(set(ids))})
    return int(rows[0]["freed"]) if rows else 0
