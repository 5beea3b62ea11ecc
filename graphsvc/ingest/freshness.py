"""Operator repair: forget when a host's facts and metrics were collected.

A collector whose clock ran ahead once sent a future `collected_at`; every correct update
since looks older and is ignored (graphsvc.ingest.clock). Forgetting the stored times lets
the next update apply, whatever its time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from topo_facts.models import MAX_TEXT_LENGTH

from graphsvc.store.gateway import Gateway

log = logging.getLogger("graphsvc.operator")


@dataclass(frozen=True)
class HostFreshnessReset:
    host: str
    previous_collected_at: float | None
    previous_metrics_at: float | None


def plausible_host_name(name: str) -> bool:
    """Ingest refuses control characters and names over 256 characters, so no host has one (and
    a NUL cannot even reach FalkorDB): such a name is answered as not found before the store."""
    return 0 < len(name) <= MAX_TEXT_LENGTH and not any(ord(c) < 0x20 for c in name)


async def reset_host_freshness(gw: Gateway, host: str, *, by: str) -> HostFreshnessReset | None:
    """The forgotten times, or None when no host has this name."""
    if not plausible_host_name(host):
        return None
    rows = await gw.write("host_reset_freshness", {"host": host})
    if not rows:
        return None
    row = rows[0]
    log.warning("host=%s freshness reset by %s (collected_at was %s)", host, by, row.get("previous_collected_at"))
    return HostFreshnessReset(row["host"], row.get("previous_collected_at"), row.get("previous_metrics_at"))
