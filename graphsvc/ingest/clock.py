"""How far a collector's clock may run ahead of the service's.

Facts and metrics are ordered by their `collected_at`: an update older than what is stored
is ignored (a replayed or reordered send). So one update from a collector whose clock is an
hour ahead (or a hostile one claiming the year 3000) froze its host: every correct update
after it looked older. Updates from further in the future than the allowed skew are refused
instead, saying by how much; operators can clear a host already frozen
(`resetHostFreshness`, `graphsvc reset-host`).
"""

from __future__ import annotations

from datetime import datetime


def future_skew_problem(collected_at: datetime, received_at: float, max_skew_s: float) -> str | None:
    """None if `collected_at` is at most `max_skew_s` ahead of `received_at`; else why not."""
    ahead = collected_at.timestamp() - received_at
    if ahead <= max_skew_s:
        return None
    return (
        f"collected_at is {ahead:.0f} s ahead of the service's clock (at most {max_skew_s:.0f} s allowed, "
        "GRAPHSVC_MAX_CLOCK_SKEW_S): fix the collector host's clock (NTP); the update was not applied"
    )
