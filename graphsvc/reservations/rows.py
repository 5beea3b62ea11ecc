"""The rows the reservation queries return, typed (schema/graph.toml declares the same properties).

The gateway answers plain mappings; `as_reservation_rows` and friends are the one place they
become these types, so the rest of the package reads fields by name with their types checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from graphsvc.store.backend import Row


class ReservationProps(TypedDict, total=False):
    """A Reservation node's properties (written as one map, read back with `properties(r)`)."""

    id: str
    holder: str
    state: str
    created_at: float
    expires_at: float
    renewed_at: float
    ended_at: float
    priority: int
    preemptible: bool
    idempotency_key: str
    labels: list[str]
    gpu_count: int
    request: str
    owner: str
    request_hash: str
    rank_order: list[str]
    resized_at: float
    last_checkpoint_at: float
    checkpoint_every_s: float
    preempt_by: str
    preempt_at: float
    grace_ends_at: float
    pending_gpus: list[str]
    pending_victims: list[str]
    pending_lost_gpu_seconds: float
    ttl_s: int
    started_at: float
    phase: str
    phases: list[str]
    slice_count: int
    lost_slices: list[str]
    held_uuids: list[str]  # the GPUs it holds, by uuid, kept through resizes (its history once ended)


class HeldGpuRow(TypedDict, total=False):
    """One GPU of reservation_get's `gpus` list."""

    uuid: str
    index: int
    model: str
    host: str
    rack: str | None
    scalable_unit: str | None
    state: str
    held: bool


class ReservationRow(TypedDict):
    """A row of reservations/reservation_get."""

    reservation: ReservationProps
    gpus: list[HeldGpuRow]


class WrittenRow(TypedDict):
    """The row of a write that made one reservation (reservations/reserve_gpus, reserve_in_host):
    its id, its properties as stored and the GPUs it holds as [uuid, index, model, host, rack,
    scalable_unit] lists."""

    id: str
    reservation: ReservationProps
    taken: list[list[Any]]


class SparedVictim(TypedDict):
    """A victim in reservations/end_preemption's `spared`: a live reservation the preemption warned."""

    id: str
    holder: str


class EndedPreemptionRow(TypedDict):
    """The row of reservations/end_preemption: the preemption ended, and the victims it spared."""

    id: str
    spared: list[SparedVictim]


class HoldingRow(TypedDict, total=False):
    """A row of reservations/preemptible_holdings: a live preemptible reservation and its progress."""

    reservation: str
    holder: str
    priority: int
    gpus: list[str]
    hosts: list[str]
    created_at: float
    last_checkpoint_at: float | None
    checkpoint_every_s: float | None


class Notices(TypedDict):
    """What a lease holder should know besides its lease (graphsvc.reservations.resize.notices)."""

    id: str
    state: str
    rank_order: list[str]
    phase: str | None
    phases: list[str]
    last_checkpoint_at: float | None
    checkpoint_every_s: float | None
    preempt_by: str | None
    preempt_at: float | None


def as_reservation_rows(rows: Sequence[Row]) -> list[ReservationRow]:
    """The rows, less any whose reservation has no properties: on Neo4j (read committed) a read
    that reaches a reservation the history pruner deletes meanwhile gets an empty map for it.
    Such a reservation is gone, and reads as not found."""
    return [
        cast(ReservationRow, {**r, "gpus": [g if _complete(g) else _known(g) for g in r.get("gpus") or []]})
        for r in rows
        if (r.get("reservation") or {}).get("id") is not None
    ]


def _complete(gpu: Mapping[str, Any]) -> bool:
    """Whether a GPU row has what `_known` would fill (its host is still there): such a row is
    used as read, not copied (a copy of every GPU row on every read; stop 66's profile)."""
    return gpu.get("index") is not None and gpu.get("host") is not None and gpu.get("model") is not None


def _known(gpu: Mapping[str, Any]) -> HeldGpuRow:
    """A GPU of the reservation as the API can show it. One whose host was removed is no node any
    more (reservation_get lists it by uuid, the rest null), yet the GraphQL `GPU` (index Int!, host
    HostRef!) and REST `GpuOut` (host, index) types have no null: its index reads -1, its host and
    model "" (unknown), so an ended reservation and its idempotent retry still list every GPU it held."""
    row = dict(gpu)
    if row.get("index") is None:
        row["index"] = -1
    if row.get("host") is None:
        row["host"] = ""
    if row.get("model") is None:
        row["model"] = ""
    return cast(HeldGpuRow, row)


def as_holding_rows(rows: Sequence[Row]) -> list[HoldingRow]:
    """Each holding with its GPUs and hosts sorted: the statement collects them in its plan's
    order, and a victim's GPUs are an answer (GraphQL `victims { gpus }`)."""
    return [cast(HoldingRow, {**r, "gpus": sorted(r["gpus"]), "hosts": sorted(r["hosts"])}) for r in rows]


class LeaseTerms(TypedDict):
    """What renew_reservation and renew_mig_slices take to choose a lease: the caller's TTL (None:
    the one last granted) and the service's default and bound."""

    ttl_s: int | None
    default_ttl_s: int
    max_ttl_s: int
