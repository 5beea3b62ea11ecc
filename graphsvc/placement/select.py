"""Choosing GPUs inside one host or one NVLink domain: eligibility, cliques, bottlenecks.

Full mesh means every pair directly NVLink-connected, i.e. a clique in the NVLink graph.
In a switched domain (an HGX board, an NVL72 rack) every member pair is connected, so any
k members form one; on direct-attached NVLink (bridged pairs, the DGX-1 cube-mesh) a
k-clique may not exist even with k GPUs free, and a small exact search finds it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from graphsvc.placement.model import PCIE_GBPS, SWITCHED_KINDS, Gpu, nvlink_gbps
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest

UNHEALTHY = frozenset({"failed", "degraded"})
# A failed GPU is never free (the free-GPU counters leave it out too): not even `allow-unhealthy`
# offers it; that option admits degraded GPUs only.
FAILED = "failed"
# Utilisation at or above this, on a GPU no reservation holds, means someone runs outside the service.
BUSY_UTILIZATION_PCT = 10.0
# Device memory in use at or above this, on a GPU no reservation holds, means a process outside the
# service holds it (an idle CUDA context takes ~0.3-0.6 GiB; a job's weights and buffers far more).
BUSY_MEMORY_MIB = 2048
# NIC port states (topo_facts.models.PortState) under which a GPU's rail carries no traffic.
NIC_DOWN = frozenset({"down", "init"})
MAX_CLIQUE_SEARCH_NODES = 32


def eligible(gpu: Gpu, req: PlacementRequest) -> bool:
    """Every per-GPU hard constraint; unknown telemetry passes, unknown memory does not.

    The host exclusion is checked here too, not only in the candidate queries: every search
    path (one host, an NVLink domain spanning trays, a leaf, a preemption plan) ends here.
    """
    if gpu.state != "free" or gpu.host in req.excluded or gpu.mig_mode:
        return False  # a MIG-enabled GPU is partitioned: never offered whole
    if req.model_match is not None and not req.model_match.matches(gpu.model):
        return False
    if req.min_memory_gib is not None and (gpu.memory_mib is None or gpu.memory_mib < req.min_memory_gib * 1024):
        return False
    health = (gpu.health or "").lower()
    if health == FAILED or (req.exclude_unhealthy and health in UNHEALTHY):
        return False
    too_hot = req.max_temperature_c is not None and (gpu.temperature_c or 0.0) > req.max_temperature_c
    if too_hot:
        return False
    if req.capabilities and req.capabilities.unmet(gpu.model) is not None:
        return False
    if req.exclusive and busy_outside(gpu):
        return False
    return not (req.gpu_nic_affinity and gpu.via != "pcie-switch")


def busy_outside(gpu: Gpu) -> bool:
    """A free GPU that someone uses anyway (utilisation or memory in use): not free for an exclusive
    job. Unknown telemetry is not busy (a collector without NVML load data must not hide GPUs)."""
    return (gpu.utilization_pct or 0.0) >= BUSY_UTILIZATION_PCT or (gpu.memory_used_mib or 0) >= BUSY_MEMORY_MIB


def rail_up(gpu: Gpu) -> bool:
    """Can this GPU talk to other hosts? Not when its nearest NIC's port is known to be down
    (a multi-host job would route its traffic through another rail at a fraction of the speed)."""
    return (gpu.nic_state or "").lower() not in NIC_DOWN


def pair_gbps(a: Gpu, b: Gpu) -> float:
    """Bandwidth between two GPUs: NVLink if direct, else PCIe in a host, else the smaller NIC share
    (`Gpu.nic_gbps`: the NIC ports serving each GPU, not its nearest port alone)."""
    nv = nvlink_gbps(a, b)
    if nv is not None:
        return nv
    if a.host == b.host:
        return PCIE_GBPS
    return min(a.nic_gbps, b.nic_gbps)


def bottleneck_pairs(gpus: list[Gpu]) -> float | None:
    """The slowest pair, by visiting every pair: O(n^2). The definition `bottleneck` must equal
    (kept for its property test and the infeasible-placement benchmark's before/after ratio)."""
    if len(gpus) < 2:
        return None
    worst = float("inf")
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            worst = min(worst, pair_gbps(a, b))
    return worst


def bottleneck(gpus: list[Gpu]) -> float | None:
    """The slowest pair's GB/s, computed per group of GPUs that share a bandwidth class: O(n).

    Visiting every pair (`bottleneck_pairs`) cost seconds for a 1,000-GPU candidate, and the
    infeasibility diagnosis ranks such candidates at every step of its binary search. Without a
    direct link between them, a pair's bandwidth depends only on its two GPUs' classes:
    - on one host: the switch bandwidth if both sit in one switched NVLink domain (both with
      switch lanes), else PCIe;
    - across hosts: the switch bandwidth if both sit in one NVLink fabric clique (both with
      lanes), else the slower of their NICs.
    So the minimum over pairs is a minimum over a few groups: per (host, domain) the slowest
    switch link, if any host holds GPUs outside one such group the PCIe path, per domain spanning
    hosts its slowest lane, and the slowest NIC of any GPU that has a partner on another host
    outside its clique. Hosts with direct NVLink edges (bridged pairs, the DGX-1 cube-mesh) are
    visited pair by pair (a handful of GPUs each). Inputs outside these rules (a domain with
    two kinds, a direct edge between hosts, a GPU listed twice) take `bottleneck_pairs`, so
    the answer is always the per-pair one (tests/unit/test_bottleneck.py checks it at random).
    """
    if len(gpus) < 2:
        return None
    if not _regular(gpus):
        return bottleneck_pairs(gpus)
    worst = float("inf")
    by_host: dict[str, list[Gpu]] = defaultdict(list)
    for g in gpus:
        by_host[g.host].append(g)
    for members in by_host.values():
        worst = min(worst, _within_host(members))
    if len(by_host) > 1:
        worst = min(worst, _across_hosts(gpus, {h: len(m) for h, m in by_host.items()}))
    return worst


def _regular(gpus: list[Gpu]) -> bool:
    """Distinct GPUs, one kind per NVLink domain, direct NVLink edges only inside a host."""
    host_of = {g.uuid: g.host for g in gpus}
    if len(host_of) != len(gpus):
        return False
    kinds: dict[str, str | None] = {}
    for g in gpus:
        if g.nvlink_domain is not None and kinds.setdefault(g.nvlink_domain, g.domain_kind) != g.domain_kind:
            return False
        for peer in g.direct:
            if host_of.get(peer, g.host) != g.host:
                return False
    return True


def _switch_group(g: Gpu) -> str | None:
    """The switched NVLink domain a GPU reaches its peers through, if it has lanes to it."""
    if g.nvlink_domain is not None and g.domain_kind in SWITCHED_KINDS and g.switch_gbps > 0:
        return g.nvlink_domain
    return None


def _within_host(members: list[Gpu]) -> float:
    """The slowest pair inside one host (inf for a single GPU)."""
    if len(members) < 2:
        return float("inf")
    if any(g.direct for g in members):
        pairs = bottleneck_pairs(members)  # direct edges: visit the host's pairs
        return float("inf") if pairs is None else pairs
    worst = float("inf")
    groups: dict[str | None, list[float]] = defaultdict(list)
    ungrouped = 0
    for g in members:
        dom = _switch_group(g)
        if dom is None:
            ungrouped += 1
        else:
            groups[dom].append(g.switch_gbps)
    for lanes in groups.values():
        if len(lanes) > 1:
            worst = min(worst, min(lanes))  # any two members: the slower one's lanes
    if ungrouped or len(groups) > 1:
        worst = min(worst, PCIE_GBPS)  # some pair is not in one switched domain
    return worst


def _across_hosts(gpus: list[Gpu], per_host: dict[str, int]) -> float:
    """The slowest pair of GPUs on different hosts: a fabric clique's lanes, or the slower NIC."""
    worst = float("inf")
    cliques = [_clique_of(g) for g in gpus]
    hosts_of: dict[str, set[str]] = defaultdict(set)
    size: dict[str, int] = defaultdict(int)
    on_host: dict[tuple[str, str], int] = defaultdict(int)
    slowest: dict[str, float] = {}
    for g, dom in zip(gpus, cliques, strict=True):
        if dom is not None:
            hosts_of[dom].add(g.host)
            size[dom] += 1
            on_host[(dom, g.host)] += 1
            slowest[dom] = min(slowest.get(dom, g.switch_gbps), g.switch_gbps)
    for dom, hosts in hosts_of.items():
        if len(hosts) > 1:  # every member has a partner on another host: its slowest lanes count
            worst = min(worst, slowest[dom])
    total = len(gpus)
    for g, dom in zip(gpus, cliques, strict=True):
        partners = total - per_host[g.host]  # GPUs on other hosts
        if dom is not None:
            partners -= size[dom] - on_host[(dom, g.host)]  # those reached over the clique
        if partners > 0:
            worst = min(worst, g.nic_gbps)  # its pairs' smaller NIC share is at most its own
    return worst


def _clique_of(g: Gpu) -> str | None:
    """The NVLink fabric clique (NVL72) a GPU reaches other hosts through, if it has lanes."""
    return _switch_group(g) if g.domain_kind == "fabric-clique" else None


def _cool_first(gpus: Iterable[Gpu]) -> list[Gpu]:
    """Best-connected to other hosts first (a GPU whose own NIC ports failed reaches the fabric
    through another's at a fraction of the rate: taken last, never ahead of one with its own),
    then coolest, then by index. On a healthy host every GPU's share is the same."""
    return sorted(gpus, key=lambda g: (-g.nic_gbps, g.temperature_c if g.temperature_c is not None else 50.0, g.index))


def find_clique(gpus: list[Gpu], k: int) -> list[Gpu] | None:
    """A k-clique of the NVLink graph among these GPUs, coolest-first where there is a choice."""
    if k <= 1:
        return _cool_first(gpus)[:k] if len(gpus) >= k else None
    by_domain: dict[str | None, list[Gpu]] = defaultdict(list)
    for g in gpus:
        by_domain[g.nvlink_domain].append(g)
    # Switched domains: every member pair is connected.
    best: list[Gpu] | None = None
    for dom, members in by_domain.items():
        if dom is not None and members[0].domain_kind in SWITCHED_KINDS:
            hosts = {g.host for g in members}
            if members[0].domain_kind == "nvswitch" and len(hosts) > 1:
                continue
            if len(members) >= k and (best is None or len(members) < len(best)):
                best = members
    if best is not None:
        return _cool_first(best)[:k]
    # Direct-attached NVLink: exact search over small graphs.
    for dom, members in by_domain.items():
        if dom is None or len(members) < k or len(members) > MAX_CLIQUE_SEARCH_NODES:
            continue
        found = _search(_cool_first(members), k)
        if found is not None:
            return found
    return None


def _search(nodes: list[Gpu], k: int) -> list[Gpu] | None:
    adj = {a.uuid: {b.uuid for b in nodes if b is not a and nvlink_gbps(a, b) is not None} for a in nodes}

    def extend(chosen: list[Gpu], rest: list[Gpu]) -> list[Gpu] | None:
        if len(chosen) == k:
            return chosen
        for i, cand in enumerate(rest):
            if len(chosen) + len(rest) - i < k:
                return None
            if all(cand.uuid in adj[c.uuid] for c in chosen):
                found = extend([*chosen, cand], rest[i + 1 :])
                if found is not None:
                    return found
        return None

    return extend([], nodes)


def choose_in_host(gpus: list[Gpu], k: int, req: PlacementRequest) -> list[Gpu] | None:
    """k GPUs of one host (or one domain) meeting the NVLink requirement, or None."""
    pool = [g for g in gpus if eligible(g, req)]
    if len(pool) < k:
        return None
    nvlink = req.nvlink
    if req.same_nvlink_domain and nvlink is NVLinkRequirement.NONE:
        nvlink = NVLinkRequirement.ANY
    if nvlink is NVLinkRequirement.FULL_MESH:
        return find_clique(pool, k)
    clique = find_clique(pool, k)
    if clique is not None:
        return clique  # the best bandwidth there is, whatever was asked
    if nvlink is NVLinkRequirement.ANY:
        by_domain: dict[str, list[Gpu]] = defaultdict(list)
        for g in pool:
            if g.nvlink_domain is not None:
                by_domain[g.nvlink_domain].append(g)
        fits = sorted((m for m in by_domain.values() if len(m) >= k), key=len)
        return _cool_first(fits[0])[:k] if fits else None
    # No NVLink asked: keep to as few domains as possible, coolest first.
    by_domain_any: dict[str | None, list[Gpu]] = defaultdict(list)
    for g in pool:
        by_domain_any[g.nvlink_domain].append(g)
    ordered: list[Gpu] = []
    for members in sorted(by_domain_any.values(), key=lambda m: -len(m)):
        ordered.extend(_cool_first(members))
    return ordered[:k]


def rank_order(gpus: list[Gpu]) -> list[Gpu]:
    """Collective rank order: hosts grouped, and NVLink neighbours adjacent within a host."""
    out: list[Gpu] = []
    by_host: dict[str, list[Gpu]] = defaultdict(list)
    for g in gpus:
        by_host[g.host].append(g)
    for host in sorted(by_host):
        remaining = sorted(by_host[host], key=lambda g: g.index)
        ring = [remaining.pop(0)]
        while remaining:
            last = ring[-1]
            nxt = max(remaining, key=lambda g: (nvlink_gbps(last, g) or 0.0, -g.index))
            remaining.remove(nxt)
            ring.append(nxt)
        out.extend(ring)
    return out
