"""Placing a shaped job: carve TP groups inside NVLink domains, keep the job inside one unit.

Pure functions over hosts already read from the graph (graphsvc.placement.model). The search
tries the job's tiers tightest first (only its own when the job level is required); in each
tier it carves every unit (leaf, scalable unit, ...) into TP groups, tightest group tier
first, and keeps the unit with the fewest escalated groups and then the fewest eligible GPUs
left over (best fit: big units stay whole for the next big job). Ranks follow Megatron-LM's
default order (tp fastest, then dp, then pp): rank = tp_rank + tp * (dp_rank + dp * pp_rank).
Groups are laid out in that order too (a stage's DP replicas next to each other, then the next
stage): gradient all-reduce over DP moves more bytes per step than the activations PP passes
between neighbours, which is why Megatron-LM orders DP inside PP. Each DP ring takes the same
local GPU (hence the same rail) on every host, and each host holds a contiguous run of ranks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from graphsvc.placement.model import SWITCHED_KINDS, Gpu, Host, InfeasibleReason, fabric_islands, leaf_units
from graphsvc.placement.select import bottleneck, eligible, find_clique, pair_gbps
from graphsvc.placement.shape import (
    TIERS,
    GroupPlacement,
    JobShape,
    LevelBandwidth,
    RankSlot,
    ShapedPlacement,
    Tier,
)


@dataclass(frozen=True)
class HostUnits:
    """What groups hosts beyond their own facts, decided once per placement over its hosts."""

    leaf: Mapping[str, str]  # host -> its leaf unit (model.leaf_units)
    island: Mapping[str, str]  # host -> its fabric island's suffix within its cluster (model.fabric_islands)

    @staticmethod
    def of(hosts: list[Host]) -> HostUnits:
        return HostUnits(leaf_units(hosts), fabric_islands(hosts))


def host_key(tier: Tier, host: Host, units: HostUnits) -> str | None:
    """The unit a host belongs to at a job tier (None: the graph does not say). `units`: the
    hosts' leaf units and fabric islands."""
    if tier is Tier.HOST:
        return host.name
    if tier is Tier.LEAF:
        return units.leaf.get(host.name)
    if tier is Tier.SCALABLE_UNIT:
        # Host facts name scalable units (`su-01`); two clusters may both have one of that name.
        return _in_cluster(host, host.scalable_unit)
    if tier is Tier.POD:
        return host.pod  # named after a spine: one cluster's (a switch is in one cluster's fabric)
    if tier is Tier.CLUSTER:
        # One fabric: no cable joins two clusters', not even within a site (docs/sites.md); and
        # within a cluster, one island of it (leaves no switch joins: no path between them).
        unit = f"cluster:{host.cluster}" if host.cluster else f"site:{host.site}" if host.site else "cluster"
        return unit + units.island.get(host.name, "")
    raise ValueError(tier)  # NVLink domains are keyed per GPU (gpu_key)


def _in_cluster(host: Host, unit: str | None) -> str | None:
    return None if unit is None else f"{host.cluster}/{unit}" if host.cluster else unit


def gpu_key(tier: Tier, host: Host, gpu: Gpu, units: HostUnits) -> str | None:
    if tier is Tier.NVLINK_DOMAIN:
        return gpu.nvlink_domain
    return host_key(tier, host, units)


@dataclass
class _Group:
    tier: Tier
    gpus: list[Gpu]

    @property
    def hosts(self) -> list[str]:
        return sorted({g.host for g in self.gpus})


def _chunks(gpus: list[Gpu], size: int) -> list[list[Gpu]]:
    return [gpus[i : i + size] for i in range(0, len(gpus) - size + 1, size)]


def _carve_domain(members: list[Gpu], tp: int) -> list[list[Gpu]]:
    """TP groups inside one NVLink domain: a host's GPUs first (trays kept whole), then across trays."""
    by_host: dict[str, list[Gpu]] = defaultdict(list)
    for g in sorted(members, key=lambda g: (g.host, g.index)):
        by_host[g.host].append(g)
    switched = members[0].domain_kind in SWITCHED_KINDS
    out: list[list[Gpu]] = []
    leftovers: list[Gpu] = []
    for host in sorted(by_host, key=lambda h: (-len(by_host[h]), h)):
        pool = by_host[host]
        if switched or tp == 1:
            groups = _chunks(pool, tp)
        else:
            groups = []
            while len(pool) >= tp:
                clique = find_clique(pool, tp)
                if clique is None:
                    break
                groups.append(sorted(clique, key=lambda g: g.index))
                pool = [g for g in pool if g not in clique]
        out.extend(groups)
        used = {g.uuid for grp in groups for g in grp}
        leftovers.extend(g for g in by_host[host] if g.uuid not in used)
    if members[0].domain_kind == "fabric-clique":
        out.extend(_chunks(leftovers, tp))  # an NVL72 rack: any members form a group
    return out


def carve(
    hosts: list[Host],
    shape: JobShape,
    units: HostUnits,
    domain: str | None = None,
    widest: Tier = Tier.CLUSTER,
) -> list[_Group]:
    """Every TP group the level allows inside these hosts, tightest tier first, GPUs disjoint.

    A preferred group level widens up to `widest` (the job's own tier: a group is never wider
    than the unit the job sits in). `units`: every host's leaf unit (leaf_units over all the
    hosts the job may use, not just these)."""
    req = shape.gpu_request()
    free = [(h, g) for h in hosts for g in h.gpus if eligible(g, req) and (domain is None or g.nvlink_domain == domain)]
    taken: set[str] = set()
    out: list[_Group] = []
    for tier in shape.group_level.tiers():
        if TIERS.index(tier) > TIERS.index(widest):
            break
        at_tier: dict[str, list[Gpu]] = defaultdict(list)
        for host, g in free:
            key = gpu_key(tier, host, g, units)
            if key is not None and g.uuid not in taken:
                at_tier[key].append(g)
        for key in sorted(at_tier):
            members = at_tier[key]
            if tier is Tier.NVLINK_DOMAIN:
                groups = _carve_domain(members, shape.tp)
            else:
                by_host: dict[str, list[Gpu]] = defaultdict(list)
                for g in members:
                    by_host[g.host].append(g)
                ordered = [g for h in sorted(by_host, key=lambda h: (-len(by_host[h]), h)) for g in by_host[h]]
                groups = _chunks(sorted(ordered, key=lambda g: (g.host, g.index)) if tier is Tier.HOST else ordered,
                                 shape.tp)  # fmt: skip
            for grp in groups:
                out.append(_Group(tier, grp))
                taken.update(g.uuid for g in grp)
    return out


def _select(groups: list[_Group], shape: JobShape, units: HostUnits) -> list[_Group]:
    """The groups to use: tightest tier first; on as few NVLink domains (or hosts) as possible, the
    last one the tightest fit, so that DP and PP traffic stays local and whole domains stay free;
    or spread evenly over leaves when asked."""

    def leaf(g: _Group) -> str:
        return units.leaf.get(g.gpus[0].host, "")

    ordered = sorted(groups, key=lambda g: (TIERS.index(g.tier), leaf(g), g.hosts[0], g.gpus[0].index))
    if shape.spread_leaves:
        by_leaf: dict[str, list[_Group]] = defaultdict(list)
        for g in ordered:
            by_leaf[leaf(g)].append(g)
        picked: list[_Group] = []
        while len(picked) < shape.groups and any(by_leaf.values()):
            for unit in sorted(by_leaf):
                if by_leaf[unit] and len(picked) < shape.groups:
                    picked.append(by_leaf[unit].pop(0))
        return sorted(picked, key=lambda g: (leaf(g), g.hosts[0], g.gpus[0].index))
    best_tier = TIERS.index(ordered[0].tier) if ordered else 0
    bins: dict[str, list[_Group]] = defaultdict(list)
    rest: list[_Group] = []
    for g in ordered:
        if TIERS.index(g.tier) == best_tier:
            bins[g.gpus[0].nvlink_domain or g.hosts[0]].append(g)
        else:
            rest.append(g)
    chosen: list[_Group] = []
    remaining = sorted(bins.values(), key=lambda b: (-len(b), b[0].hosts[0]))
    while remaining and len(chosen) < shape.groups:
        need = shape.groups - len(chosen)
        fits = [b for b in remaining if len(b) >= need]
        pick = min(fits, key=lambda b: (len(b), b[0].hosts[0])) if fits else remaining[0]
        remaining.remove(pick)
        chosen.extend(pick[:need])
    chosen.extend(rest[: shape.groups - len(chosen)])
    return sorted(chosen, key=lambda g: (TIERS.index(g.tier), leaf(g), g.hosts[0], g.gpus[0].index))


@dataclass
class _Option:
    tier: Tier
    unit: str
    groups: list[_Group]
    escalated: int
    leftover: int


def _units(tier: Tier, hosts: list[Host], units: HostUnits) -> dict[str, list[Host]]:
    found: dict[str, list[Host]] = defaultdict(list)
    for h in hosts:
        if tier is Tier.NVLINK_DOMAIN:
            for dom in sorted({g.nvlink_domain for g in h.gpus if g.nvlink_domain}):
                found[dom].append(h)
        else:
            key = host_key(tier, h, units)
            if key is not None:
                found[key].append(h)
    return found


def place_shape(shape: JobShape, hosts: list[Host]) -> ShapedPlacement | list[InfeasibleReason]:
    """The best placement of a shaped job on these hosts, or the reasons none exists."""
    shape = shape.validated()
    req = shape.gpu_request()
    by_name = {h.name: h for h in hosts}
    units = HostUnits.of(hosts)
    best_by_tier: dict[Tier, tuple[str, int]] = {}
    for tier in shape.job_level.tiers():
        best: _Option | None = None
        for unit, members in sorted(_units(tier, hosts, units).items()):
            domain = unit if tier is Tier.NVLINK_DOMAIN else None
            eligible_n = sum(
                1 for h in members for g in h.gpus if eligible(g, req) and (domain is None or g.nvlink_domain == domain)
            )
            if eligible_n < shape.ranks and tier is not shape.job_level.tier:
                continue  # cannot hold the job; only the level's own tier is reported when nothing fits
            groups = carve(members, shape, units, domain, tier)
            top = best_by_tier.get(tier)
            if top is None or len(groups) > top[1]:
                best_by_tier[tier] = (unit, len(groups))
            if len(groups) < shape.groups:
                continue
            chosen = _select(groups, shape, units)
            option = _Option(
                tier,
                unit,
                chosen,
                sum(1 for g in chosen if shape.group_level.widened(g.tier)),
                eligible_n - shape.ranks,
            )
            if best is None or (option.escalated, option.leftover, option.unit) < (
                best.escalated,
                best.leftover,
                best.unit,
            ):
                best = option
        if best is not None:
            return _layout(shape, best, by_name, best_by_tier)
    return _infeasible(shape, hosts, best_by_tier, units)


def _infeasible(
    shape: JobShape, hosts: list[Host], best_by_tier: dict[Tier, tuple[str, int]], units: HostUnits
) -> list[InfeasibleReason]:
    total = len(carve(hosts, shape, units))
    lvl = shape.group_level
    where = "one NVLink domain" if lvl.tier is Tier.NVLINK_DOMAIN else f"one {lvl.tier.value}"
    if total < shape.groups:
        return [
            InfeasibleReason(
                "groupIn",
                f"only {total} groups of {shape.tp} eligible GPUs fit in {where} each across the cluster; "
                f"the job needs {shape.groups} (pp={shape.pp} x dp={shape.dp})",
                nearest_feasible=f"tp={shape.tp} dp={total}" if total else None,
            )
        ]
    tier = shape.job_level.tier
    if not shape.job_level.required:
        # Widened up to one cluster and still short: the groups are there, spread over clusters,
        # and a job never spans two (it said "the job level is required" here: a probe's case).
        per_cluster = {u: len(carve(m, shape, units)) for u, m in _units(Tier.CLUSTER, hosts, units).items()}
        unit, most = max(sorted(per_cluster.items()), key=lambda kv: kv[1], default=("", 0))
        held = f"; the most is {most} in {unit}" if unit else ""
        return [
            InfeasibleReason(
                "jobIn",
                f"no cluster holds {shape.groups} groups of {shape.tp}{held}: {total} fit across the "
                "clusters, and a job never spans two (no cable joins them)",
                nearest_feasible=f"tp={shape.tp} dp={most}" if most else None,
            )
        ]
    unit, most = best_by_tier.get(tier, ("", 0))
    held = f"the most is {most} in {unit}" if unit else f"no host says which {tier.value} it is in"
    return [
        InfeasibleReason(
            "jobIn",
            f"no {tier.value} holds {shape.groups} groups of {shape.tp} ({held}); "
            f"the job level is required, so it was not widened",
            nearest_feasible=shape.text().replace(f"job-in={shape.job_level.text()}", f"job-in={tier.value}:preferred"),
        )
    ]


def _layout(
    shape: JobShape, option: _Option, hosts: dict[str, Host], best_by_tier: dict[Tier, tuple[str, int]]
) -> ShapedPlacement:
    tp, dp = shape.tp, shape.dp
    grid: dict[tuple[int, int], _Group] = {}
    groups: list[GroupPlacement] = []
    for n, group in enumerate(option.groups):
        pp_rank, dp_rank = divmod(n, dp)  # stage by stage: a stage's DP replicas side by side
        grid[(dp_rank, pp_rank)] = group
        group.gpus.sort(key=lambda g: (g.host, g.index))
        groups.append(
            GroupPlacement(
                pp_rank, dp_rank, group.tier, group.hosts, [g.uuid for g in group.gpus], bottleneck(group.gpus)
            )
        )
    ranks: list[RankSlot] = []
    for (dp_rank, pp_rank), group in grid.items():
        for tp_rank, g in enumerate(group.gpus):
            rank = tp_rank + tp * (dp_rank + dp * pp_rank)
            ranks.append(RankSlot(rank, tp_rank, pp_rank, dp_rank, g.host, g.index, g.uuid, g.rail))
    ranks.sort(key=lambda r: r.rank)
    bandwidth, aligned = _bandwidth(shape, grid)
    escalated = []
    if shape.job_level.widened(option.tier):
        unit, most = best_by_tier.get(shape.job_level.tier, ("", 0))
        escalated.append(
            f"job: {shape.job_level.tier.value} -> {option.tier.value} (no {shape.job_level.tier.value} holds "
            f"{shape.groups} groups of {tp}" + (f"; the most is {most} in {unit})" if unit else ")")
        )
    wider = [g for g in groups if shape.group_level.widened(g.tier)]
    if wider:
        escalated.append(
            f"groups: {len(wider)} of {len(groups)} sit in one {wider[0].tier.value}, not one "
            f"{shape.group_level.tier.value}"
        )
    placement = ShapedPlacement(shape, option.tier, option.unit, groups, ranks, bandwidth, aligned, escalated)
    placement.reason = _reason(shape, placement, option.leftover)
    return placement


def _bandwidth(shape: JobShape, grid: dict[tuple[int, int], _Group]) -> tuple[list[LevelBandwidth], float]:
    tp, pp, dp = shape.tp, shape.pp, shape.dp
    tp_bw = [b for g in grid.values() if (b := bottleneck(g.gpus)) is not None]
    out = [LevelBandwidth("tp", min(tp_bw) if tp_bw else None, "worst pair inside a TP group (all-reduce per layer)")]
    pp_links = [
        pair_gbps(grid[(i, j)].gpus[k], grid[(i, j + 1)].gpus[k])
        for i in range(dp)
        for j in range(pp - 1)
        for k in range(tp)
    ]
    out.append(LevelBandwidth("pp", min(pp_links) if pp_links else None, "worst link between neighbouring stages"))
    dp_links: list[float] = []
    rings = aligned = 0
    for j in range(pp):
        for k in range(tp):
            ring = [grid[(i, j)].gpus[k] for i in range(dp)]
            if dp > 1:
                dp_links.extend(pair_gbps(a, b) for a, b in zip(ring, ring[1:] + ring[:1], strict=True))
            if len({g.host for g in ring}) > 1:
                rings += 1
                rails = {g.rail for g in ring}
                aligned += int(len(rails) == 1 and None not in rails)
    out.append(LevelBandwidth("dp", min(dp_links) if dp_links else None, "worst link of a data-parallel ring"))
    return out, (aligned / rings if rings else 1.0)


def _counted(n: int, noun: str) -> str:
    """'1 host', '2 hosts'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _reason(shape: JobShape, p: ShapedPlacement, leftover: int) -> str:
    hosts = {r.host for r in p.ranks}
    bw = ", ".join(f"{b.level} {b.bottleneck_gbps:g} GB/s" for b in p.bandwidth if b.bottleneck_gbps is not None)
    inside = (
        "one NVLink domain" if shape.group_level.tier is Tier.NVLINK_DOMAIN else f"one {shape.group_level.tier.value}"
    )
    text = (
        f"{shape.ranks} GPUs on {_counted(len(hosts), 'host')}: {_counted(shape.groups, 'TP group')} of {shape.tp}, "
        f"{sum(1 for g in p.groups if not shape.group_level.widened(g.tier))} inside {inside}; "
        f"the job inside {p.job_tier.value} {p.job_unit} ({leftover} eligible GPUs left there)"
    )
    if bw:
        text += f"; bottlenecks {bw}"
    if shape.dp > 1:
        text += f"; {p.rail_aligned_share:.0%} of DP rings rail-aligned"
    return text + (f"; widened: {'; '.join(p.escalated)}" if p.escalated else "")
