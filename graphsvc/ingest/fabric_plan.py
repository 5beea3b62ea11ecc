"""Where each host sits in the fabric: the leaves its NICs reach, the spines above those, the
cores above those, and its pod.

Hops between two hosts follow from the first three (graphsvc.placement.model.hops): a shared
leaf is 1 switch hop (leaf), a shared spine 3 (leaf-spine-leaf), a shared core 5 (leaf-spine-
core-spine-leaf); hosts that share none have no up-then-down path (IB fat-tree routing, ftree or
up/down, routes up to a common switch and down again). The pod is one name per host, for the
exports' hierarchy and the shaped `job-in=pod` tier. One pod per host said 5 hops for dual-plane
hosts that meet under a second plane's spine (3), and 5 for leaf islands no switch joins (no
path; a probe's cases). Computing this once per fabric change keeps it off the placement path.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict

from topo_facts import FabricFacts, SwitchTier


def host_positions(facts: FabricFacts) -> list[dict[str, object]]:
    tiers = {s.name: s.tier for s in facts.switches}
    spines_of: dict[str, set[str]] = defaultdict(set)
    for up in facts.switch_uplinks:
        if tiers.get(up.lower) is SwitchTier.LEAF and tiers.get(up.upper) is SwitchTier.SPINE:
            spines_of[up.lower].add(up.upper)
    # Pods: each leaf's pod is named by the spine most leaves reach, of those it reaches (ties by
    # name), so every leaf of a pod shares that spine: any two of its hosts are at most 3 switches
    # apart. A union-find over leaves sharing any spine chained leaves that share none (L1-S1-L2-
    # S2-L3: L1 and L3 are 5 switches apart, and were called 3; a probe's case). On a clean pod,
    # every leaf under every spine, both give the pod its first spine's name.
    reach = Counter(spine for uplinked in spines_of.values() for spine in uplinked)
    pod_name = {
        leaf: f"pod:{min(uplinked, key=lambda spine: (-reach[spine], spine))}" for leaf, uplinked in spines_of.items()
    }
    host_leaves: dict[str, set[str]] = defaultdict(set)
    cables: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for cable in facts.nic_uplinks:
        host_leaves[cable.host].add(cable.switch)
        cables[cable.host].add((cable.nic, cable.switch))
    # The switches one and two levels above a host's leaves, whatever their tiers say: a two-tier
    # fabric whose top is named "core" (leaf -> core uplinks, which the fabric model accepts)
    # had no spine and no core above its leaves, and hosts under two leaves were said to have
    # no path (a review's case).
    above: dict[str, set[str]] = defaultdict(set)
    for up in facts.switch_uplinks:
        above[up.lower].add(up.upper)
    out: list[dict[str, object]] = []
    for host, reached in sorted(host_leaves.items()):
        ordered = sorted(reached)
        pods = sorted(pod_name.get(leaf, f"pod:{leaf}") for leaf in ordered)
        spines = sorted({spine for leaf in ordered for spine in above.get(leaf, ())})
        cores = sorted({core for spine in spines for core in above.get(spine, ())})
        position: dict[str, object] = {"leaves": ordered, "pod": pods[0], "spines": spines, "cores": cores}
        out.append({"host": host, **position, "cabling": cabling_digest(sorted(cables[host]), position)})
    return out


def home_leaves(facts: FabricFacts) -> set[str]:
    """The leaves that are some cabled host's first (lowest rail, then name; a leaf without a
    rail counts as rail 0), stored as Switch.home_leaf.

    The one-leaf search pages one leaf per rail group, not all eight: on a rail-optimised fabric
    every rail leaf of a scalable unit has the same hosts. It pages rail-0 leaves, and these: a
    host whose rail-0 NIC has no cable (an unplugged or missing port) is under no rail-0 leaf, and
    was invisible to it (`16xH100 ib-hops<=1` refused on two OCI hosts sharing rails 1-7)."""
    rails = {s.name: s.rail or 0 for s in facts.switches if s.tier is SwitchTier.LEAF}
    reached: dict[str, set[str]] = defaultdict(set)
    for cable in facts.nic_uplinks:
        if cable.switch in rails:
            reached[cable.host].add(cable.switch)
    return {min(leaves, key=lambda name: (rails[name], name)) for leaves in reached.values()}


def cabling_digest(cables: list[tuple[str, str]], position: dict[str, object]) -> str:
    """A digest of what the fabric says of one host: which switch each of its NICs is cabled to,
    and its leaves and pod. Stored as Host.fabric_digest, half of placement's topology key
    (graphsvc.placement.topology_cache): the same cabling imported again keeps it (an import is
    idempotent), any change to the host's cables or position changes it."""
    dumped = json.dumps([cables, position], sort_keys=True)
    return hashlib.blake2b(dumped.encode(), digest_size=16).hexdigest()
