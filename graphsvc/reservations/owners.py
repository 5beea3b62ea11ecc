"""Who owns each reservation, kept in the process for the ownership check.

A scheduler renews, releases and resizes only its own reservations, so before each of those
the service needs the reservation's owner; reading it from the store cost one round trip on
every scheduler's release (operators skip the check). An owner never changes once written and a
reservation id is never reused, so an entry kept here is never stale: only missing (another
replica created the reservation, or it was pushed out), and then the check reads the store.
"""

from __future__ import annotations


class Owners:
    """Reservation id -> owner (None for a reservation stored without one), the newest `size` kept."""

    def __init__(self, size: int = 65_536) -> None:
        self.size = size
        self._owner: dict[str, str | None] = {}

    def remember(self, reservation_id: str, owner: str | None) -> None:
        self._owner.pop(reservation_id, None)
        self._owner[reservation_id] = owner
        if len(self._owner) > self.size:
            del self._owner[next(iter(self._owner))]  # the oldest entry: dicts keep insertion order

    def lookup(self, reservation_id: str) -> tuple[bool, str | None]:
        """(whether this process has seen the reservation, its owner)."""
        if reservation_id in self._owner:
            return True, self._owner[reservation_id]
        return False, None

    def __len__(self) -> int:
        return len(self._owner)
