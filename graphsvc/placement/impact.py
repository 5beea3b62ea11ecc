"""Blast radius: what a failed host, NVLink domain, switch or link would cut off or slow.

Pure function over plain rows (live holdings, hosts, switches) so every rule has a table
test. The rules, from what NCCL does when a path goes away:

- **host**: its GPUs are gone; every reservation holding one is *cut off* (those ranks lost).
- **nvlinkDomain** (an NVSwitch tray, an NVL72 rack's fabric): GPUs stay up but lose NVLink
  to each other; a reservation with two or more GPUs in it is *slowed* (PCIe or the network).
- **leaf switch**: a host whose every NIC goes to that leaf leaves the fabric: a reservation
  spanning hosts with a GPU there is *cut off*; a multi-host reservation with a GPU whose
  nearest NIC is on that leaf (its rail) but whose host has other leaves is *slowed* (NCCL
  routes over another rail). A single-host reservation needs no fabric and is untouched.
- **spine switch**: a reservation whose hosts share no leaf needs a spine. A leaf left without
  uplinks isolates its hosts from other leaves: such a reservation with a GPU there is *cut
  off*; one on leaves that keep other uplinks is *slowed* (one of n uplinks gone).
- **link** between two switches: as a spine failure, for the lower switch only.
Capacity: free GPUs lost (on a failed host, or behind a leaf that leaves the fabric) and
free GPUs left, plus free GPUs that lose NVLink for a domain failure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class ImpactTarget(StrEnum):
    HOST = "host"
    NVLINK_DOMAIN = "nvlink-domain"
    SWITCH = "switch"
    LINK = "link"


class Effect(StrEnum):
    CUT_OFF = "cut-off"
    SLOWED = "slowed"


@dataclass(frozen=True)
class Holding:
    """One GPU of a live reservation; `rank` is its position in the reservation's GPU list."""

    reservation: str
    holder: str
    uuid: str
    host: str
    index: int
    domain: str | None
    leaf: str | None
    rank: int = 0


@dataclass(frozen=True)
class HostState:
    name: str
    free: int
    leaves: frozenset[str]
    domains: frozenset[str]


@dataclass(frozen=True)
class SwitchState:
    name: str
    tier: str
    uplinks: frozenset[str]


@dataclass
class AffectedReservation:
    id: str
    holder: str
    effect: Effect
    gpu_uuids: list[str]
    ranks: list[int]
    hosts: list[str]
    why: str


@dataclass
class Impact:
    target: ImpactTarget
    name: str
    reservations: list[AffectedReservation] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)
    hosts_cut_off: list[str] = field(default_factory=list)
    free_gpus_lost: int = 0
    free_gpus_left: int = 0
    free_gpus_losing_nvlink: int = 0
    summary: str = ""


class UnknownTarget(LookupError):
    """The named host, domain, switch or link is not in the graph."""


def ranked(holdings: list[Holding]) -> list[Holding]:
    """Number each reservation's GPUs in list order (host, index): the ranks launchers use."""
    out: list[Holding] = []
    seen: dict[str, int] = defaultdict(int)
    for h in sorted(holdings, key=lambda h: (h.reservation, h.host, h.index)):
        out.append(Holding(h.reservation, h.holder, h.uuid, h.host, h.index, h.domain, h.leaf, seen[h.reservation]))
        seen[h.reservation] += 1
    return out


def impact(
    target: ImpactTarget,
    name: str,
    holdings: list[Holding],
    hosts: list[HostState],
    switches: list[SwitchState],
    peer: str | None = None,
) -> Impact:
    """What failing `name` (for a link: the switch `name` to its uplink `peer`) would do."""
    by_host = {h.name: h for h in hosts}
    by_switch = {s.name: s for s in switches}
    by_res: dict[str, list[Holding]] = defaultdict(list)
    for h in ranked(holdings):
        by_res[h.reservation].append(h)
    rule = _rules(target, name, peer, by_host, by_switch)
    cut_hosts = rule.isolated
    out = Impact(target, name if peer is None else f"{name}->{peer}")
    for res_id, gpus in sorted(by_res.items()):
        res_hosts = {g.host for g in gpus}
        multi = len(res_hosts) > 1
        if target is ImpactTarget.HOST:
            hit = [g for g in gpus if g.host == name]
            effect = Effect.CUT_OFF if hit else None
        elif target is ImpactTarget.NVLINK_DOMAIN:
            hit = [g for g in gpus if g.domain == name]
            effect = Effect.SLOWED if len(hit) >= 2 else None
        else:
            crossing = rule.crossing
            hit = [
                g for g in gpus
                if multi and g.host in cut_hosts and (crossing is None or crossing(g, res_hosts))
            ]  # fmt: skip
            effect = Effect.CUT_OFF if hit else None
            if effect is None and multi:
                hit = [g for g in gpus if rule.slowed(g, res_hosts)]
                effect = Effect.SLOWED if hit else None
        if effect is None:
            continue
        why = rule.why_cut if effect is Effect.CUT_OFF else rule.why_slow
        hit_hosts = sorted({g.host for g in hit})
        out.reservations.append(
            AffectedReservation(
                res_id, gpus[0].holder, effect, [g.uuid for g in hit], [g.rank for g in hit], hit_hosts, why
            )
        )
    out.holders = sorted({r.holder for r in out.reservations})
    out.hosts_cut_off = sorted(cut_hosts)
    out.free_gpus_lost = sum(by_host[h].free for h in cut_hosts if h in by_host) if rule.out_of_service else 0
    out.free_gpus_left = sum(h.free for h in hosts) - out.free_gpus_lost
    if target is ImpactTarget.NVLINK_DOMAIN:
        out.free_gpus_losing_nvlink = sum(h.free for h in hosts if name in h.domains)
    cut = sum(1 for r in out.reservations if r.effect is Effect.CUT_OFF)
    out.summary = (
        f"{target.value} {out.name}: {cut} reservations cut off, {len(out.reservations) - cut} slowed "
        f"({len(out.holders)} holders); {len(cut_hosts)} hosts "
        f"{'leave service' if rule.out_of_service else 'cut off from other leaves'}; "
        f"free GPUs: {out.free_gpus_lost} lost, {out.free_gpus_left} left"
        + (f", {out.free_gpus_losing_nvlink} lose NVLink" if target is ImpactTarget.NVLINK_DOMAIN else "")
    )
    return out


@dataclass
class _Rule:
    """What a failure does: hosts it isolates, which GPUs of a multi-host job it slows, and why."""

    isolated: set[str]
    slowed: Callable[[Holding, set[str]], bool]
    why_cut: str
    why_slow: str
    # A failed host or leaf takes hosts out of service; a spine only cuts them off from other leaves.
    out_of_service: bool = True
    crossing: Callable[[Holding, set[str]], bool] | None = None


def _never(_g: Holding, _hosts: set[str]) -> bool:
    return False


def _rules(
    target: ImpactTarget,
    name: str,
    peer: str | None,
    hosts: dict[str, HostState],
    switches: dict[str, SwitchState],
) -> _Rule:
    if target is ImpactTarget.HOST:
        if name not in hosts:
            raise UnknownTarget(f"no host {name!r}")
        return _Rule({name}, _never, f"host {name} fails: its GPUs are gone", "")
    if target is ImpactTarget.NVLINK_DOMAIN:
        if not any(name in h.domains for h in hosts.values()):
            raise UnknownTarget(f"no NVLink domain {name!r}")
        return _Rule(set(), _never, "", f"NVLink domain {name} fails: its GPUs fall back to PCIe or the network")
    if name not in switches:
        raise UnknownTarget(f"no switch {name!r}")
    sw = switches[name]
    if target is ImpactTarget.LINK:
        if peer is None or peer not in sw.uplinks:
            raise UnknownTarget(f"no link from {name!r} to {peer!r}")
        return _lost_uplinks({name: sw.uplinks - {peer}}, hosts, f"link {name}->{peer}")
    if sw.tier == "leaf":
        return _Rule(
            {h.name for h in hosts.values() if h.leaves and h.leaves <= {name}},
            lambda g, _hosts: g.leaf == name,
            f"leaf {name} fails: hosts cabled only to it leave the fabric",
            f"leaf {name} fails: GPUs whose rail NIC is on it go over another rail",
        )
    below = {s.name: s.uplinks - {name} for s in switches.values() if name in s.uplinks}
    return _lost_uplinks(below, hosts, f"{sw.tier} {name}")


def _lost_uplinks(remaining: dict[str, frozenset[str]], hosts: dict[str, HostState], what: str) -> _Rule:
    """Leaves that lose one uplink (traffic between leaves slowed) or all (cut off from other leaves)."""
    isolated_leaves = {leaf for leaf, ups in remaining.items() if not ups}
    degraded = set(remaining)
    host_leaves = {h.name: h.leaves for h in hosts.values()}

    def leaves_the_leaf(_g: Holding, res_hosts: set[str]) -> bool:
        """Does the job need a spine: is there no leaf every one of its hosts reaches?"""
        common: frozenset[str] | None = None
        for h in res_hosts:
            mine = host_leaves.get(h, frozenset())
            common = mine if common is None else common & mine
        return not common

    def slowed(g: Holding, res_hosts: set[str]) -> bool:
        return bool(host_leaves.get(g.host, frozenset()) & degraded) and leaves_the_leaf(g, res_hosts)

    return _Rule(
        {h for h, leaves in host_leaves.items() if leaves and leaves <= isolated_leaves},
        slowed,
        f"{what} fails: leaves {', '.join(sorted(isolated_leaves)) or '-'} lose every uplink",
        f"{what} fails: {len(degraded)} leaves lose an uplink; traffic between leaves shares the rest",
        out_of_service=False,
        crossing=leaves_the_leaf,
    )
