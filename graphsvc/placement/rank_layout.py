"""A shaped placement's rank map in the forms launchers read: hostfile, per-host env, rankfile, NCCL hints.

Pure text from a ShapedPlacement; nothing here reads the graph. torchrun numbers ranks
node by node (rank = node_rank * nproc_per_node + local_rank), so its map is exact only when
each host holds a contiguous run of ranks; the OpenMPI rankfile pins every rank whatever the
order, and is what to use otherwise (``contiguous`` says which case this is).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphsvc.placement.shape import RankSlot, ShapedPlacement


@dataclass
class HostLaunch:
    """What one host runs: its node rank, the GPUs in local-rank order, and their global ranks."""

    host: str
    node_rank: int
    cuda_visible_devices: str
    ranks: list[int]


@dataclass
class LaunchPlan:
    hostfile: str
    hosts: list[HostLaunch]
    rankfile: str
    contiguous: bool
    nccl_env: dict[str, str]


def _hosts_in_rank_order(ranks: list[RankSlot]) -> list[str]:
    seen: dict[str, None] = {}
    for r in sorted(ranks, key=lambda r: r.rank):
        seen.setdefault(r.host, None)
    return list(seen)


def launch_plan(p: ShapedPlacement) -> LaunchPlan:
    order = _hosts_in_rank_order(p.ranks)
    by_host: dict[str, list[RankSlot]] = {h: [] for h in order}
    for r in sorted(p.ranks, key=lambda r: r.rank):
        by_host[r.host].append(r)
    hosts = [
        HostLaunch(
            host=h,
            node_rank=n,
            cuda_visible_devices=",".join(str(r.gpu_index) for r in by_host[h]),
            ranks=[r.rank for r in by_host[h]],
        )
        for n, h in enumerate(order)
    ]
    per_node = {len(v) for v in by_host.values()}
    contiguous = len(per_node) == 1 and all(
        hl.ranks == list(range(hl.node_rank * len(hl.ranks), (hl.node_rank + 1) * len(hl.ranks))) for hl in hosts
    )
    hostfile = "".join(f"{h} slots={len(by_host[h])}\n" for h in order)
    rankfile = "".join(f"rank {r.rank}={r.host} slot={r.gpu_index}\n" for r in sorted(p.ranks, key=lambda r: r.rank))
    # Rail-aligned DP rings stay on their rail when NCCL is told not to cross NICs.
    nccl = {"NCCL_CROSS_NIC": "0" if p.rail_aligned_share == 1.0 else "1"}
    return LaunchPlan(hostfile, hosts, rankfile, contiguous, nccl)
