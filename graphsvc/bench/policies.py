"""The topology picture a replay keeps, and the baseline policies it compares with the service.

Baselines are faithful to what their real counterparts decide, at the granularity they see:

- **first-fit (count only)**: a scheduler that sees GPUs as a number: hosts in name order,
  take free GPUs until the job has enough.
- **slurm-tree**: Slurm's topology/tree: the lowest switch level (leaf group, then pod, then
  the cluster) that has enough free GPUs, choosing among switches the one that fits most
  tightly (best fit), then hosts under it best-fit (fewest free that still fit, then fill).
- **kueue-bestfit**: Kueue TAS BestFit over levels block (leaf group) > rack > host: the
  block with the most free capacity first, then inside it the tightest racks and hosts;
  a job no block can hold spans blocks (TAS "preferred" mode).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class HostView:
    name: str
    rack: str
    leaves: frozenset[str]
    pod: str
    gpus: list[tuple[str, str | None]]  # (uuid, NVLink domain) by GPU index

    @property
    def group(self) -> str:
        return ",".join(sorted(self.leaves)) or self.name


@dataclass
class Topology:
    hosts: dict[str, HostView]
    free: set[str] = field(default_factory=set)
    unavailable: set[str] = field(default_factory=set)
    host_of: dict[str, str] = field(default_factory=dict)
    domain_of: dict[str, str | None] = field(default_factory=dict)
    domain_size: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for h in self.hosts.values():
            for uuid, dom in h.gpus:
                self.host_of[uuid] = h.name
                self.domain_of[uuid] = dom
                if dom:
                    self.domain_size[dom] = self.domain_size.get(dom, 0) + 1

    def free_on(self, host: str) -> list[str]:
        return [u for u, _ in self.hosts[host].gpus if u in self.free]

    @property
    def total(self) -> int:
        return len(self.host_of)


Policy = Callable[[Topology, int], list[str] | None]


def first_fit(t: Topology, n: int) -> list[str] | None:
    chosen: list[str] = []
    for name in sorted(t.hosts):
        for u in t.free_on(name):
            chosen.append(u)
            if len(chosen) == n:
                return chosen
    return None


def _fill_best_fit(t: Topology, hosts: list[str], n: int) -> list[str] | None:
    """Best fit: one host that fits most tightly; else fill the fullest hosts first."""
    free = {h: t.free_on(h) for h in hosts}
    fits = [h for h in hosts if len(free[h]) >= n]
    if fits:
        best = min(fits, key=lambda h: (len(free[h]), h))
        return free[best][:n]
    chosen: list[str] = []
    for h in sorted(hosts, key=lambda h: (-len(free[h]), h)):
        chosen.extend(free[h][: n - len(chosen)])
        if len(chosen) == n:
            return chosen
    return None


def slurm_tree(t: Topology, n: int) -> list[str] | None:
    levels: list[dict[str, list[str]]] = [defaultdict(list), defaultdict(list), {"cluster": sorted(t.hosts)}]
    for h in t.hosts.values():
        levels[0][h.group].append(h.name)
        levels[1][h.pod].append(h.name)
    for level in levels:
        candidates = []
        for key, hosts in level.items():
            free = sum(len(t.free_on(h)) for h in hosts)
            if free >= n:
                candidates.append((free, key, hosts))
        if candidates:
            _, _, hosts = min(candidates, key=lambda c: (c[0], c[1]))
            return _fill_best_fit(t, sorted(hosts), n)
    return None


def kueue_bestfit(t: Topology, n: int) -> list[str] | None:
    blocks: dict[str, list[str]] = defaultdict(list)
    for h in t.hosts.values():
        blocks[h.group].append(h.name)
    ranked = sorted(blocks.items(), key=lambda kv: (-sum(len(t.free_on(h)) for h in kv[1]), kv[0]))
    for _, hosts in ranked:
        if sum(len(t.free_on(h)) for h in hosts) < n:
            continue
        racks: dict[str, list[str]] = defaultdict(list)
        for name in hosts:
            racks[t.hosts[name].rack].append(name)
        rack_free = {r: sum(len(t.free_on(h)) for h in hs) for r, hs in racks.items()}
        fitting = [r for r in racks if rack_free[r] >= n]
        if fitting:
            rack = min(fitting, key=lambda r: (rack_free[r], r))
            return _fill_best_fit(t, sorted(racks[rack]), n)
        return _fill_best_fit(t, sorted(hosts), n)
    # No block can hold the job: TAS "preferred" mode then spans blocks, fullest hosts first.
    if sum(len(t.free_on(h)) for h in t.hosts) >= n:
        return _fill_best_fit(t, sorted(t.hosts), n)
    return None


BASELINES: dict[str, Policy] = {
    "first-fit": first_fit,
    "slurm-tree": slurm_tree,
    "kueue-bestfit": kueue_bestfit,
}
