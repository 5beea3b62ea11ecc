"""Rail-aligned multi-host sets: pure functions over the GPUs a search may take.

Rail alignment (docs/placement.md): across hosts, every host uses the same rails and each rail's
NICs sit on one leaf, so local rank i of every host talks over one rail leaf (NCCL's rail-optimised
rings, `NCCL_CROSS_NIC=0`). Every host therefore holds the same share, one GPU per (rail, leaf)
pair. A request without a per-host split is split evenly here: 12 GPUs over 8-GPU hosts is 2 x 6
or 3 x 4, never 8 + 4 (whose hosts use different rails). Filling by count and checking alignment
afterwards missed such sets, and made a huge infeasible request read on through the whole cluster
once per probe of its diagnosis (#15, docs/benchmarks.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from graphsvc.placement.model import Gpu, Host
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.placement.select import choose_in_host

RailPair = tuple[int, str]

# At most this many rail sets are tried per group of hosts when the shares must be NVLink-connected
# (C(8, 4) = 70 on an 8-rail host): a partial mesh may connect some rail sets and not others.
MAX_RAIL_SETS = 70
# At most this many choices of one GPU per rail are tried per host and rail set (2^8 where every
# two GPUs share a NIC, on 8 rails).
MAX_SHARES = 256


def rail_pairs(pool: Sequence[Gpu]) -> dict[RailPair, list[Gpu]]:
    """The pool's GPUs by (rail, leaf) pair, lowest index first (GPUs that share a NIC share its
    pair); a GPU without a cabled rail NIC (no rail or no leaf) is left out, as it cannot be
    aligned with anything."""
    pairs: dict[RailPair, list[Gpu]] = {}
    for g in sorted(pool, key=lambda g: g.index):
        if g.rail is not None and g.leaf is not None:
            pairs.setdefault((g.rail, g.leaf), []).append(g)
    return pairs


def aligned(gpus: Sequence[Gpu]) -> bool:
    """Every host of the set uses the same (rail, leaf) pairs, one GPU per pair, and every GPU
    has one."""
    by_host: dict[str, list[tuple[int, str]]] = {}
    for g in gpus:
        if g.rail is None or g.leaf is None:
            return False
        by_host.setdefault(g.host, []).append((g.rail, g.leaf))
    if any(len(set(v)) != len(v) for v in by_host.values()):
        return False
    return len({frozenset(v) for v in by_host.values()}) == 1


def even_shares(n: int, most: int) -> list[int]:
    """The per-host shares an unsplit rail-aligned request of n GPUs can take over several hosts,
    each holding at most `most`: the divisors of n below n, largest first (fewest hosts first)."""
    return [p for p in range(min(most, n - 1), 0, -1) if n % p == 0]


Option = tuple[Host, list[Gpu]]  # a host and the GPUs of it the request may take


def pick_shares(options: Sequence[Option], p: int, count: int, req: PlacementRequest) -> list[Gpu] | None:
    """`count` hosts of `options` (in their order of preference), p GPUs each, on the same p
    (rail, leaf) pairs; with an NVLink requirement, each host's share meets it.

    Hosts are grouped by each pair they reach (a rail-optimised unit's hosts share all of theirs;
    hosts of another unit share none), and each group is tried in the options' order, taking a
    host while the pairs common to those taken stay at least p. A group repeated (the same hosts
    under another pair) is tried once. The work is bounded by hosts x pairs, where seeding from
    every host was quadratic."""
    pairs_of = [rail_pairs(pool) for _host, pool in options]
    groups: dict[RailPair, list[int]] = {}
    for i, pairs in enumerate(pairs_of):
        if len(pairs) >= p:
            for pair in pairs:
                groups.setdefault(pair, []).append(i)
    tried: set[tuple[int, ...]] = set()
    for _pair, members in sorted(groups.items(), key=lambda kv: (kv[1][0], kv[0])):
        key = tuple(members)
        if len(members) < count or key in tried:
            continue
        tried.add(key)
        chosen = _take_group([pairs_of[i] for i in members], p, count, req)
        if chosen is not None:
            return chosen
    return None


def _take_group(
    pairs_of: list[dict[RailPair, list[Gpu]]], p: int, count: int, req: PlacementRequest
) -> list[Gpu] | None:
    common: set[RailPair] | None = None
    picked: list[dict[RailPair, list[Gpu]]] = []
    for pairs in pairs_of:
        trial = set(pairs) if common is None else common & set(pairs)
        if len(trial) >= p:
            common = trial
            picked.append(pairs)
            if len(picked) == count:
                break
    if common is None or len(picked) < count:
        return None
    wants_nvlink = p > 1 and (req.nvlink is not NVLinkRequirement.NONE or req.same_nvlink_domain)
    if not wants_nvlink:
        first = sorted(common)[:p]
        return [pairs[r][0] for pairs in picked for r in first]
    for rails in itertools.islice(itertools.combinations(sorted(common), p), MAX_RAIL_SETS):
        shares = [_connected_share(pairs, rails, p, req) for pairs in picked]
        if all(share is not None for share in shares):
            return [g for share in shares if share is not None for g in share]
    return None


def _connected_share(pairs: dict[RailPair, list[Gpu]], rails: tuple[RailPair, ...], p: int,
                     req: PlacementRequest) -> list[Gpu] | None:  # fmt: skip
    """One GPU of the host on each rail, meeting the request's NVLink requirement: GPUs sharing a
    NIC are alternatives (a DGX-1's two GPUs per NIC), tried lowest index first, at most
    MAX_SHARES choices per host."""
    for share in itertools.islice(itertools.product(*(pairs[r] for r in rails)), MAX_SHARES):
        if choose_in_host(list(share), p, req) is not None:
            return list(share)
    return None
