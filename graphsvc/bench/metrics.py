"""What a placement is worth in the replay's communication model: pure functions over a `Topology`.

A ring all-reduce of S bytes on n GPUs takes 2(n-1)/n * S / B, B the bottleneck bandwidth
between consecutive ranks (NCCL's ring, the nccl-tests "bus bandwidth" definition), so a
job's communication slowdown is B_best / B, where B_best is the best bottleneck any
placement of the same size could get **anywhere on the cluster at that moment** (from the
GPUs free just before the job starts, whatever the policy). A policy that puts a 2-GPU job
on an A100 bridged pair (600 GB/s) while a whole H100 board (900 GB/s) is free scores 1.5.

Bandwidths, GB/s per GPU (shared/docs/domain.md): NVLink H100/H200 900, GB200/B200 1,800,
A100 bridged pair 600, V100 300; PCIe between GPUs of one host 32; across hosts one
400 Gb/s NIC per GPU, ~50. Fat trees are not oversubscribed here, so hops cost latency,
not bandwidth; they are counted separately.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from graphsvc.bench.policies import Topology

NVLINK_GBPS = {"H100": 900.0, "H200": 900.0, "GB200": 1800.0, "B200": 1800.0, "A100": 600.0, "V100": 300.0}
PCIE_GBPS = 32.0
NIC_GBPS = 50.0


@dataclass(frozen=True)
class Placement:
    """The measures of one placed job."""

    bottleneck_gbps: float | None  # None: one GPU, no link
    best_gbps: float | None  # the best the cluster offered that job size at that moment
    hops: int  # worst IB switch hops between two of its hosts (1 same leaf, 3 same pod, 5 across)
    domains: int
    leaves: int
    local: bool  # in one NVLink domain, or (larger than any domain) under one leaf group

    @property
    def slowdown(self) -> float | None:
        if not self.bottleneck_gbps or not self.best_gbps:
            return None
        return self.best_gbps / self.bottleneck_gbps


def bottleneck(t: Topology, models: dict[str, str], gpus: list[str]) -> float | None:
    """The slowest link of a ring over `gpus` in the model above."""
    if len(gpus) < 2:
        return None
    domains = {t.domain_of[g] for g in gpus}
    nv = NVLINK_GBPS.get(models.get(gpus[0], ""))
    if len(domains) == 1 and None not in domains and nv:
        return nv
    if len({t.host_of[g] for g in gpus}) == 1:
        return PCIE_GBPS
    return NIC_GBPS


def best_bandwidth(t: Topology, models: dict[str, str], n: int) -> float | None:
    """The best bottleneck any n of the GPUs free now could have (None for one GPU or if n do not fit)."""
    if n < 2 or len(t.free) < n:
        return None
    per_domain: dict[str, int] = defaultdict(int)
    per_host: dict[str, int] = defaultdict(int)
    domain_model: dict[str, str] = {}
    for g in t.free:
        per_host[t.host_of[g]] += 1
        dom = t.domain_of[g]
        if dom:
            per_domain[dom] += 1
            domain_model[dom] = models.get(g, "")
    options = [NVLINK_GBPS.get(domain_model[d], 0.0) for d, free in per_domain.items() if free >= n]
    if any(free >= n for free in per_host.values()):
        options.append(PCIE_GBPS)
    if len(per_host) > 1:  # n GPUs fit (checked above) and can span hosts: the NIC path
        options.append(NIC_GBPS)
    return max(options)


def measure(t: Topology, models: dict[str, str], gpus: list[str], best: float | None) -> Placement:
    hosts = {t.host_of[g] for g in gpus}
    domains = {t.domain_of[g] for g in gpus}
    max_domain = max(t.domain_size.values(), default=1)
    one_domain = len(domains) == 1 and None not in domains
    host_list = [t.hosts[h] for h in sorted(hosts)]
    hops = 0
    for i, a in enumerate(host_list):
        for b in host_list[i + 1 :]:
            hops = max(hops, 1 if a.leaves & b.leaves else (3 if a.pod == b.pod else 5))
    groups = {h.group for h in host_list}
    local = one_domain or (len(gpus) > max_domain and len(groups) == 1)
    return Placement(
        bottleneck_gbps=bottleneck(t, models, gpus),
        best_gbps=best if len(gpus) > 1 else None,
        hops=hops,
        domains=len(domains - {None}) or 1,
        leaves=len(groups),
        local=local,
    )
