"""Reads for the blast-radius question, then the pure rules in graphsvc.placement.impact."""

from __future__ import annotations

import time
from collections.abc import Callable

from graphsvc.placement.impact import Holding, HostState, Impact, ImpactTarget, SwitchState, impact
from graphsvc.store.gateway import Gateway


async def assess(
    gw: Gateway, target: ImpactTarget, name: str, peer: str | None = None, *, clock: Callable[[], float] = time.time
) -> Impact:
    """What failing this host, NVLink domain, switch or link would do now. Raises UnknownTarget."""
    holdings = [
        Holding(
            reservation=str(r["reservation"]),
            holder=str(r["holder"]),
            uuid=str(r["uuid"]),
            host=str(r["host"]),
            index=int(r["index"]),
            domain=r["domain"],
            leaf=r["leaf"],
        )
        for r in await gw.read("impact_holdings", {"now": clock()})
    ]
    hosts = [
        HostState(str(r["host"]), int(r["free"]), frozenset(r["leaves"]), frozenset(r["domains"]))
        for r in await gw.read("impact_hosts", {})
    ]
    rows = await gw.read("impact_switches", {})
    switches = [SwitchState(str(r["name"]), str(r["tier"]), frozenset(r["uplinks"])) for r in rows]
    return impact(target, name, holdings, hosts, switches, peer)
