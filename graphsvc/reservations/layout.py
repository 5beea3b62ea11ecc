"""Choosing GPUs to add to, or take from, a live reservation without breaking its layout.

A long training job is laid out once: its GPUs share an NVLink domain (or a set of them),
their NICs sit on a set of leaf switches, and every host uses the same rails (GPU i's NIC
on rail i), so that its collectives run rail by rail. Growing it anywhere else would slow
every step that follows, so growth keeps that layout where the free GPUs allow it: first
inside the domains the job already uses, then on new hosts with the same free rails under
the same leaves. Shrinking frees the GPUs whose return leaves the largest free block, so
the next big job fits. Pure functions over plain data (table tests in
tests/unit/test_reservation_layout.py); the service reads the graph and writes the result.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    """One GPU as layout sees it."""

    uuid: str
    host: str
    index: int
    domain: str | None = None
    leaf: str | None = None
    rail: int | None = None


@dataclass(frozen=True)
class GrowPlan:
    uuids: list[str]
    layout_kept: bool
    reason: str


def _rails_by_host(slots: Iterable[Slot]) -> dict[str, frozenset[int | None]]:
    rails: dict[str, set[int | None]] = defaultdict(set)
    for s in slots:
        rails[s.host].add(s.rail)
    return {h: frozenset(r) for h, r in rails.items()}


def rail_aligned(slots: Sequence[Slot]) -> bool:
    """Every host uses the same rails, and every rail is known (one host is trivially aligned)."""
    if any(s.rail is None for s in slots):
        return False
    return len(set(_rails_by_host(slots).values())) <= 1


def layout_kept(current: Sequence[Slot], added: Sequence[Slot], *, domain_room: bool) -> bool:
    """Whether `current + added` keeps the job's layout.

    Domains: every added GPU is in a domain the job uses, unless those domains had no room
    (`domain_room` False: then new hosts are fine). Leaves: a GPU on a new host sits on the
    leaf the job already uses for its rail (no new leaf switch). Rails: an aligned job stays
    aligned.
    """
    domains = {s.domain for s in current if s.domain is not None}
    if domains and domain_room and any(s.domain not in domains for s in added):
        return False
    leaves = {s.leaf for s in current if s.leaf is not None}
    rail_leaves: dict[int, set[str]] = defaultdict(set)
    for s in current:
        if s.rail is not None and s.leaf is not None:
            rail_leaves[s.rail].add(s.leaf)
    hosts = {s.host for s in current}
    for s in added:
        if s.host in hosts:
            continue  # the job's own host: its NICs are already the job's
        same_rail = rail_leaves.get(s.rail) if s.rail is not None else None
        if same_rail is not None and s.leaf not in same_rail:
            return False
        if same_rail is None and leaves and s.leaf not in leaves:
            return False
    return not rail_aligned(current) or rail_aligned([*current, *added])


def _by_host(pool: Iterable[Slot]) -> dict[str, list[Slot]]:
    hosts: dict[str, list[Slot]] = defaultdict(list)
    for s in pool:
        hosts[s.host].append(s)
    for slots in hosts.values():
        slots.sort(key=lambda s: s.index)
    return hosts


def _aligned_pick(current: Sequence[Slot], pool: Sequence[Slot], add: int) -> list[Slot] | None:
    """Keep an aligned job aligned: new rails on every current host, or new hosts with its rails;
    one GPU per rail each (a DGX-1 or PCIe host has two GPUs per NIC: taking every free GPU of a
    chosen rail grew 1 GPU to 4 where 3 were asked, a probe's case)."""
    rails = _rails_by_host(current)
    hosts = sorted(rails)
    free = _by_host(pool)
    wanted = next(iter(rails.values()))
    per_host = len(wanted)
    if add % len(hosts) == 0:
        want = add // len(hosts)
        common: set[int | None] | None = None
        for h in hosts:
            have = {s.rail for s in free.get(h, [])}
            common = have if common is None else common & have
        # Rails the job does not use yet first: a rail used twice shares its NIC.
        usable = sorted((r for r in (common or set()) if r is not None), key=lambda r: (r in wanted, r))
        if len(usable) >= want:
            chosen = usable[:want]
            return [_first_on_rail(free[h])[r] for h in hosts for r in chosen]
    if add % per_host == 0:
        fits = []
        for h, slots in free.items():
            if h in rails:
                continue
            on_rails = {r: s for r, s in _first_on_rail(slots).items() if r in wanted}
            if len(on_rails) == per_host:
                # best fit: the host with the fewest other free GPUs first, so whole hosts stay whole
                fits.append((len(slots), h, [on_rails[r] for r in sorted(on_rails, key=lambda r: r or 0)]))
        fits.sort(key=lambda f: (f[0], f[1]))
        if len(fits) >= add // per_host:
            return [s for _n, _h, picked in fits[: add // per_host] for s in picked]
    return None


def _first_on_rail(slots: Sequence[Slot]) -> dict[int | None, Slot]:
    """The lowest-index free GPU of each rail (slots come sorted by index: _by_host)."""
    first: dict[int | None, Slot] = {}
    for s in slots:
        first.setdefault(s.rail, s)
    return first


def _packed_pick(current: Sequence[Slot], pool: Sequence[Slot], add: int) -> list[Slot] | None:
    """Any `add` GPUs: the job's own hosts first, then the hosts with the most free GPUs."""
    if len(pool) < add:
        return None
    mine = {s.host for s in current}
    free = _by_host(pool)
    order = sorted(free, key=lambda h: (h not in mine, -len(free[h]), h))
    picked: list[Slot] = []
    for h in order:
        picked.extend(free[h][: add - len(picked)])
        if len(picked) == add:
            return picked
    return None


def plan_grow(
    current: Sequence[Slot],
    pool: Sequence[Slot],
    add: int,
    *,
    keep_layout: bool = True,
    fits: Callable[[Sequence[Slot]], bool] = lambda _: True,
) -> GrowPlan | None:
    """The GPUs to add, best layout first; None when no choice fits (or none keeps the layout
    and `keep_layout` is set). `pool` is the free, eligible GPUs near the job (not its own);
    `fits` refuses a choice whose hosts break the job's IB hop limit (reach.all_meet)."""
    if add < 1:
        return None
    domains = {s.domain for s in current if s.domain is not None}
    in_domain = [s for s in pool if s.domain in domains] if domains else []
    domain_room = len(in_domain) >= add
    aligned = rail_aligned(current)
    tiers: list[tuple[str, Sequence[Slot]]] = []
    if domains:
        tiers.append(("inside its NVLink domain", in_domain))
    tiers.append(("under its leaf switches", pool))
    fallback: GrowPlan | None = None
    for where, candidates in tiers:
        for picker in (_aligned_pick, _packed_pick) if aligned else (_packed_pick,):
            picked = picker(current, candidates, add)
            if picked is None or not fits(picked):
                continue
            kept = layout_kept(current, picked, domain_room=domain_room)
            hosts = len({s.host for s in picked})
            detail = f"{add} GPU(s) on {hosts} host(s) {where}"
            if kept:
                rails = ", rails aligned" if aligned else ""
                return GrowPlan([s.uuid for s in picked], True, f"{detail}{rails}: the layout is kept")
            if fallback is None:
                fallback = GrowPlan([s.uuid for s in picked], False, f"{detail}: the layout is NOT kept")
    return None if keep_layout else fallback


def plan_shrink(
    current: Sequence[Slot],
    remove: int,
    free_by_host: Mapping[str, int],
    free_by_domain: Mapping[str, int],
) -> list[str]:
    """The `remove` GPUs whose return leaves the largest free block (host or NVLink domain).

    Greedy, one host at a time: take from the host whose GPUs, added to what is free around
    them, make the biggest block; prefer emptying a host over thinning several (the rest of
    the job stays rail-aligned), and the highest GPU indices (the lowest ranks stay put).
    """
    if not 0 < remove < len(current):
        return []
    left = _by_host(current)
    host_free = dict(free_by_host)
    domain_free = dict(free_by_domain)
    chosen: list[str] = []
    while len(chosen) < remove:
        need = remove - len(chosen)
        best: tuple[tuple[int, int, int, str], str] | None = None
        for h, slots in left.items():
            if not slots:
                continue
            n = min(need, len(slots))
            taken = slots[-n:]
            block = host_free.get(h, 0) + n
            for d in {s.domain for s in taken if s.domain is not None}:
                block = max(block, domain_free.get(d, 0) + sum(1 for s in taken if s.domain == d))
            key = (block, int(n == len(slots)), -len(slots), h)
            if best is None or key > best[0]:
                best = (key, h)
        assert best is not None
        h = best[1]
        n = min(need, len(left[h]))
        taken, left[h] = left[h][-n:], left[h][:-n]
        host_free[h] = host_free.get(h, 0) + n
        for s in taken:
            if s.domain is not None:
                domain_free[s.domain] = domain_free.get(s.domain, 0) + 1
        chosen.extend(s.uuid for s in taken)
    return chosen


def replacement_plan(
    current: Sequence[Slot], failed: Sequence[Slot], pool: Sequence[Slot]
) -> tuple[dict[str, str], bool] | None:
    """Replacement GPUs for `failed` ones: failed uuid -> new uuid, and whether the layout held.

    A failed GPU is replaced on its own rail and leaf, in its NVLink domain where there is
    room; a host whose GPUs of the job all failed is replaced by one other host with those
    rails free (best fit: the fewest other free GPUs), so the job stays rail-aligned. The
    layout is kept when every replacement has the failed GPU's rail and leaf.
    """
    failed_ids = {s.uuid for s in failed}
    job_hosts = {s.host for s in current if s.uuid not in failed_ids}
    spare = {s.uuid: s for s in pool if s.uuid not in failed_ids}
    mapping: dict[str, str] = {}
    by_host = _by_host(failed)
    for host in sorted(by_host):
        group = by_host[host]
        whole = not any(s.host == host and s.uuid not in failed_ids for s in current)
        if whole and len(group) > 1:
            free = _by_host(s for s in spare.values() if s.host not in job_hosts and s.host != host)
            fits: list[tuple[int, str, list[Slot]]] = []
            for h, slots in free.items():
                found = [next((x for x in slots if x.rail == g.rail and x.leaf == g.leaf), None) for g in group]
                chosen = [x for x in found if x is not None]
                if len(chosen) == len(group):
                    fits.append((len(slots), h, chosen))
            if fits:
                _n, _h, picks = min(fits, key=lambda f: (f[0], f[1]))
                for old, new in zip(group, picks, strict=True):
                    mapping[old.uuid] = new.uuid
                    del spare[new.uuid]
                continue
        for old in group:
            if not spare:
                return None
            pick = min(
                spare.values(),
                key=lambda x: (
                    x.rail != old.rail,
                    x.leaf != old.leaf,
                    x.domain != old.domain,
                    x.host not in job_hosts,
                    x.host,
                    x.index,
                ),
            )
            mapping[old.uuid] = pick.uuid
            del spare[pick.uuid]
    olds = {s.uuid: s for s in failed}
    news = {s.uuid: s for s in pool}
    kept = all(news[n].rail == olds[o].rail and news[n].leaf == olds[o].leaf for o, n in mapping.items())
    return mapping, kept
