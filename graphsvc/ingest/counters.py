"""The free-GPU counters of hosts, NVLink domains and leaves: checked and repaired at start-up.

Every write that changes GPU states moves the counters in the same statement, so they can only
disagree with the GPUs after something outside the service changed the graph, or after a
crash of an older version that recounted in separate statements. Placement seeks candidates
by these counters, so a wrong one hides free GPUs or offers taken ones: the service checks
them every time it opens the store and recounts what disagrees.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from graphsvc.store.gateway import Gateway

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CounterRepair:
    hosts: int
    domains: int
    leaves: int

    @property
    def total(self) -> int:
        return self.hosts + self.domains + self.leaves


async def repair_counters(gateway: Gateway) -> CounterRepair:
    """Recount every counter that disagrees with its GPUs; one log line when any did."""
    drift = await gateway.read("counter_drift")
    hosts = sorted(str(r["key"]) for r in drift if r["kind"] == "Host")
    domains = sorted(str(r["key"]) for r in drift if r["kind"] == "NVLinkDomain")
    leaves = sorted(str(r["key"]) for r in drift if r["kind"] == "Switch")
    if hosts:
        await gateway.write("recount_hosts", {"hosts": hosts})
    if domains:
        await gateway.write("recount_domains", {"uuids": domains})
    if hosts or leaves:
        # Leaves sum their hosts' counters: recount them after the hosts.
        affected = sorted(
            set(leaves) | {str(r["key"]) for r in await gateway.read("counter_drift") if r["kind"] == "Switch"}
        )
        if affected:
            await gateway.write("recount_leaves", {"names": affected})
    repair = CounterRepair(len(hosts), len(domains), len(leaves))
    if repair.total:
        log.warning(
            "free-GPU counters disagreed with the GPUs and were recounted: %d host(s), %d NVLink domain(s), %d leaf(s)",
            repair.hosts,
            repair.domains,
            repair.leaves,
        )
    return repair
