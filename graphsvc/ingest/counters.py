"""The free-GPU counters of hosts, NVLink domains and leaves, and the hosts' impaired-GPU counts:
checked and repaired at start-up.

Every write that changes GPU states moves the counters in the same statement, so they can only
disagree with the GPUs after something outside the service changed the graph, or after a
crash of an older version that recounted in separate statements. Placement seeks candidates
by these counters, so a wrong one hides free GPUs or offers taken ones: the service checks
them every time it opens the store and recounts what disagrees. Host.impaired_gpus
(queries/fragments/host_impaired) lets placement call a host ready without reading its GPUs, so
a count too low there offers GPUs a request refuses: it is checked and recounted alike.
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
    impaired: int = 0  # hosts whose impaired_gpus was recounted

    @property
    def total(self) -> int:
        return self.hosts + self.domains + self.leaves + self.impaired


async def repair_counters(gateway: Gateway) -> CounterRepair:
    """Recount every counter that disagrees with its GPUs; one log line when any did."""
    drift = await gateway.read("counter_drift")
    hosts = sorted(str(r["key"]) for r in drift if r["kind"] == "Host")
    domains = sorted(str(r["key"]) for r in drift if r["kind"] == "NVLinkDomain")
    leaves = sorted(str(r["key"]) for r in drift if r["kind"] == "Switch")
    impaired = sorted(str(r["key"]) for r in drift if r["kind"] == "HostImpaired")
    if hosts or impaired:
        # recount_hosts recounts both a host's free GPUs and its impaired ones.
        await gateway.write("recount_hosts", {"hosts": sorted(set(hosts) | set(impaired))})
    if domains:
        await gateway.write("recount_domains", {"uuids": domains})
    if hosts or leaves:
        # Leaves sum their hosts' counters: recount them after the hosts.
        affected = sorted(
            set(leaves) | {str(r["key"]) for r in await gateway.read("counter_drift") if r["kind"] == "Switch"}
        )
        if affected:
            await gateway.write("recount_leaves", {"names": affected})
    repair = CounterRepair(len(hosts), len(domains), len(leaves), len(impaired))
    if repair.total:
        log.warning(
            "GPU counters disagreed with the GPUs and were recounted: free GPUs of %d host(s), %d NVLink "
            "domain(s), %d leaf(s); impaired GPUs of %d host(s)",
            repair.hosts,
            repair.domains,
            repair.leaves,
            repair.impaired,
        )
    return repair
