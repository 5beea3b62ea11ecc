"""The domain's state vocabularies, as enums (the graph stores their values as strings).

A GPU is `free` or `reserved`; a reservation is `active` until it is released, expires or
is preempted. Device health is `topo_facts.Health` (ok, degraded, failed, unknown): the
collectors define it and the service reuses it. GraphQL exposes these values as they are
stored (strings), so clients that compare with "free" keep working.
"""

from __future__ import annotations

from enum import StrEnum

from topo_facts import Health


class GpuState(StrEnum):
    FREE = "free"
    RESERVED = "reserved"

    @classmethod
    def parse(cls, value: object) -> GpuState | None:
        """The stored value as a state; None when the graph has none (never guessed as free)."""
        if value is None:
            return None
        try:
            return cls(str(value))
        except ValueError:
            return None


class ReservationState(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"
    EXPIRED = "expired"
    PREEMPTED = "preempted"


def counts_as_free(state: object, health: object) -> bool:
    """Whether a GPU counts as free everywhere (counters, summaries, metrics, answers): its state
    is free and its health is not failed. Degraded and unknown still count: they run work, and
    `allow-unhealthy` may take a degraded GPU; a failed one can run nothing (docs/reservations.md)."""
    return state == GpuState.FREE and health != Health.FAILED
