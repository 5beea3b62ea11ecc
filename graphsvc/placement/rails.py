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
from graphsvc.placement.select import choose_in_host

RailPair = tuple[int, str]

# At most this many sets of p rails are listed per host (C(8, 4) = 70 on an 8-rail host; a host
# of 16 rails would list C(16, 8) = 12,870).
MAX_HOST_SETS = 4096
# At most this many host shares are checked for an NVLink requirement in one pick (~12 us each):
# a cluster where rail sets reach enough hosts but no share connects stops there.
MAX_SHARE_CHECKS = 20_000
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

    The hosts are read in order, and each adds itself to every set of p of its pairs (a set is a
    subset of every host reaching it, so every set that can fit is counted); the first set that
    `count` hosts reach is the answer, so a search over an idle unit stops after `count` hosts. The
    sets of a host are listed once per distinct set of pairs (a unit's idle hosts share theirs),
    and a pair fewer than `count` hosts reach is left out first (a request larger than every unit
    lists nothing). With an NVLink requirement, a host counts for a set only once its share on it
    connects, which is checked only for sets `count` hosts reach, at most MAX_SHARE_CHECKS times.

    Until stop 59 hosts were taken while the pairs common to those taken stayed at least p: an
    early host narrowed them past the hosts that fit (five hosts, no three sharing the first
    host's rails), and a later grouping by pair capped the sets it tried (review findings)."""
    wants_nvlink = p > 1 and (req.nvlink is not NVLinkRequirement.NONE or req.same_nvlink_domain)
    pairs_of = [rail_pairs(pool) for _host, pool in options]
    reach = Counter(pair for pairs in pairs_of if len(pairs) >= p for pair in pairs)
    sets_of: dict[frozenset[RailPair], list[tuple[RailPair, ...]]] = {}
    reached: dict[tuple[RailPair, ...], list[int]] = {}
    connected: dict[tuple[RailPair, ...], tuple[int, list[list[Gpu]]]] = {}  # hosts checked, shares that connect
    checks = 0
    for i, pairs in enumerate(pairs_of):
        usable = frozenset(q for q in pairs if reach[q] >= count)
        if len(usable) < p:
            continue
        sets = sets_of.get(usable)
        if sets is None:
            sets = sets_of[usable] = list(itertools.islice(itertools.combinations(sorted(usable), p), MAX_HOST_SETS))
        for rails in sets:
            hosts = reached.setdefault(rails, [])
            hosts.append(i)
            if len(hosts) < count:
                continue
            if not wants_nvlink:
                return [pairs_of[j][r][0] for j in hosts for r in rails]
            seen, shares = connected.get(rails, (0, []))
            for j in hosts[seen:]:
                if checks >= MAX_SHARE_CHECKS:
                    return None
                checks += 1
                share = _connected_share(pairs_of[j], rails, p, req)
                if share is not None:
                    shares.append(share)
            connected[rails] = (len(hosts), shares)
            if len(shares) >= count:
                return [g for share in shares[:count] for g in share]
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
