"""Operator decommission: remove a host and everything its facts put in the graph.

Ingest replaces a host's facts but never forgets a host: a host emptied of its GPUs stayed in the
exports and in /healthz forever, and a host renamed could not be sent under its new name (its GPU
uuids belonged to the old one: 409). Removal is one statement (`queries/remove_host.cypher`):
the host, its devices, its NICs' cables, the NVLink domains left empty, its rack if left empty,
its cluster if nothing is left in it (no rack, host, fabric switch or site), with every counter
it fed recounted, all or nothing, and never while a live reservation holds one of its GPUs or
MIG slices (the holds are the answer, so the operator knows whom to ask).
A collector still running on the host brings it back with its next facts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphsvc.ingest.freshness import plausible_host_name
from graphsvc.ingest.service import Fingerprints
from graphsvc.reservations.events import Event, EventBus
from graphsvc.store.gateway import Gateway

log = logging.getLogger("graphsvc.operator")


@dataclass(frozen=True)
class HostRemoved:
    """What went with the host (counts; named apart from `Conflict.gpus`, a list, so that one
    selection can ask for both), and the counters it fed that were recounted. `clusters_removed`
    is 1 when it was its cluster's last thing (no rack, host, fabric switch or site left naming
    it) and the cluster went with it: the operator hears it in the answer, not only in the log."""

    host: str
    gpus_removed: int
    mig_slices_removed: int
    nics_removed: int
    cables_removed: int
    pcie_switches_removed: int
    numa_nodes_removed: int
    nvswitches_removed: int
    nvlink_domains_removed: int
    nvlink_domains_recounted: int
    switches_recounted: int
    racks_removed: int
    clusters_removed: int


@dataclass(frozen=True)
class HostHold:
    """A live hold on one of the host's GPUs (or on a MIG slice of it, `mig_slice`)."""

    reservation: str
    holder: str
    gpu: str
    mig_slice: str | None = None


@dataclass(frozen=True)
class HostHeld:
    """The removal was refused, nothing written: these live reservations hold the host's GPUs."""

    host: str
    holds: tuple[HostHold, ...]

    @property
    def reservations(self) -> list[str]:
        return sorted({h.reservation for h in self.holds})

    @property
    def message(self) -> str:
        named = self.reservations
        shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
        return (
            f"host {self.host!r} has GPUs or MIG slices held by {len(named)} live reservation(s): {shown}; "
            "release them (or let them expire) before removing the host"
        )


async def remove_host(
    gw: Gateway,
    name: str,
    *,
    by: str,
    events: EventBus | None = None,
    fingerprints: Fingerprints | None = None,
    now: float | None = None,
) -> HostRemoved | HostHeld | None:
    """Remove the host, or say who holds it (nothing written); None when no host has this name.

    Once removed, subscribers hear `host.removed` (subject: the host, detail: who removed it), and
    the fingerprint ingest kept for the host is forgotten: the next document under this name is a
    new host, written in full (the hint would only have cost one statement that writes nothing)."""
    if not plausible_host_name(name):
        return None
    at = time.time() if now is None else now
    rows = await gw.write("remove_host", {"name": name, "now": at})
    if not rows:
        return None
    row = rows[0]
    if not row["removed"]:
        held = HostHeld(row["host"], tuple(_hold(h) for h in row["holders"]))
        log.info("host=%s removal by %s refused: held by %s", name, by, ",".join(held.reservations))
        return held
    removed = HostRemoved(
        host=row["host"],
        gpus_removed=row["gpus"],
        mig_slices_removed=row["mig_slices"],
        nics_removed=row["nics"],
        cables_removed=row["cables"],
        pcie_switches_removed=row["pcie_switches"],
        numa_nodes_removed=row["numa_nodes"],
        nvswitches_removed=row["nvswitches"],
        nvlink_domains_removed=row["domains_removed"],
        nvlink_domains_recounted=row["domains_recounted"],
        switches_recounted=row["switches_recounted"],
        racks_removed=row["racks_removed"],
        clusters_removed=row["clusters_removed"],
    )
    # An operator's change to the graph, at WARNING as the freshness reset is: it is rare and
    # someone will ask later where a host went.
    log.warning(
        "host=%s removed by %s (gpus=%d mig_slices=%d nics=%d cables=%d nvlink_domains_removed=%d clusters_removed=%d)",
        name,
        by,
        removed.gpus_removed,
        removed.mig_slices_removed,
        removed.nics_removed,
        removed.cables_removed,
        removed.nvlink_domains_removed,
        removed.clusters_removed,
    )
    if fingerprints is not None:
        fingerprints.forget(name)
    if events is not None:
        await events.publish(Event("host.removed", name, "", at, f"removed by {by}"))
    return removed


def _hold(row: Mapping[str, Any]) -> HostHold:
    return HostHold(str(row["reservation"]), str(row["holder"]), str(row["gpu"]), row.get("mig_slice"))
