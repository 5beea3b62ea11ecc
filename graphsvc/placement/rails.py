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
from collections import Counter
from collections.abc import Sequence

from graphsvc.placement.model import Gpu, Host
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.placement.select import choose_in_host, first_shares

RailPair = tuple[int, str]

# At most this many rail sets are tried per group of hosts (C(8, 4) = 70 on an 8-rail host; a set
# holds the group's pair, so at most C(7, 3) = 35 there).
MAX_RAIL_SETS = 70
# At most this many rail sets are tried in all by one pick (a cluster of many units, each a group).
MAX_SETS_TRIED = 4096
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
    hosts of another unit share none). For each group, in the order of its first host, each set of
    p pairs holding its pair and pairs enough of the group's hosts reach is tried: the first
    `count` hosts, in the options' order, that reach the whole set and (NVLink) can connect a
    share on it. A set is tried once, in the first group holding it (the hosts reaching it are the
    same in every group it is in). Taking hosts while the pairs common to those taken stayed at
    least p (until stop 59) let an early host narrow them past the hosts that fit (five hosts, no
    three of them sharing the first host's rails); every set is tried instead, at most
    MAX_RAIL_SETS per group and MAX_SETS_TRIED in all."""
    pairs_of = [rail_pairs(pool) for _host, pool in options]
    groups: dict[RailPair, list[int]] = {}
    for i, pairs in enumerate(pairs_of):
        if len(pairs) >= p:
            for pair in pairs:
                groups.setdefault(pair, []).append(i)
    tried: set[tuple[RailPair, ...]] = set()
    for pair, members in sorted(groups.items(), key=lambda kv: (kv[1][0], kv[0])):
        if len(members) < count:
            continue
        reach = Counter(q for i in members for q in pairs_of[i])
        others = sorted(q for q, hosts in reach.items() if hosts >= count and q != pair)
        for rest in itertools.islice(itertools.combinations(others, p - 1), MAX_RAIL_SETS):
            rails = tuple(sorted((pair, *rest)))
            if rails in tried:
                continue
            if len(tried) >= MAX_SETS_TRIED:
                return None
            tried.add(rails)
            chosen = _take(rails, [pairs_of[i] for i in members], count, req)
            if chosen is not None:
                return chosen
    return None


def _take(
    rails: tuple[RailPair, ...], pairs_of: list[dict[RailPair, list[Gpu]]], count: int, req: PlacementRequest
) -> list[Gpu] | None:
    """The first `count` hosts reaching every pair of `rails` with a share on them (one GPU per
    rail; with an NVLink requirement, a connected one)."""
    p = len(rails)
    wants_nvlink = p > 1 and (req.nvlink is not NVLinkRequirement.NONE or req.same_nvlink_domain)
    shares = (
        _connected_share(pairs, rails, p, req) if wants_nvlink else [pairs[r][0] for r in rails]
        for pairs in pairs_of
        if all(r in pairs for r in rails)
    )
    return first_shares(shares, count)


def _connected_share(pairs: dict[RailPair, list[Gpu]], rails: tuple[RailPair, ...], p: int,
                     req: PlacementRequest) -> list[Gpu] | None:  # fmt: skip
    """One GPU of the host on each rail, meeting the request's NVLink requirement: GPUs sharing a
    NIC are alternatives (a DGX-1's two GPUs per NIC), tried lowest index first, at most
    MAX_SHARES choices per host."""
    for share in itertools.islice(itertools.product(*(pairs[r] for r in rails)), MAX_SHARES):
        if choose_in_host(list(share), p, req) is not None:
            return list(share)
    return None
