"""Where each host sits in the fabric: the leaves its NICs reach and its pod.

Hops between two hosts follow from these: a shared leaf is 1 switch hop; leaves that
share a spine (one pod) are 3 (leaf-spine-leaf); different pods meet at the core, 5.
Computing this once per fabric change keeps it off the placement path.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

from topo_facts import FabricFacts, SwitchTier


def host_positions(facts: FabricFacts) -> list[dict[str, object]]:
    tiers = {s.name: s.tier for s in facts.switches}
    spines_of: dict[str, set[str]] = defaultdict(set)
    for up in facts.switch_uplinks:
        if tiers.get(up.lower) is SwitchTier.LEAF and tiers.get(up.upper) is SwitchTier.SPINE:
            spines_of[up.lower].add(up.upper)
    # Pods: leaves joined through shared spines (union-find over leaves).
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    by_spine: dict[str, list[str]] = defaultdict(list)
    for leaf, uplinked in spines_of.items():
        find(leaf)
        for spine in uplinked:
            by_spine[spine].append(leaf)
    for under in by_spine.values():
        for other in under[1:]:
            parent[find(other)] = find(under[0])
    pod_name: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    for leaf in list(parent):
        members[find(leaf)].append(leaf)
    for group in members.values():
        spines = sorted({s for leaf in group for s in spines_of[leaf]})
        name = f"pod:{spines[0]}" if spines else f"pod:{min(group)}"
        for leaf in group:
            pod_name[leaf] = name
    host_leaves: dict[str, set[str]] = defaultdict(set)
    cables: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for cable in facts.nic_uplinks:
        host_leaves[cable.host].add(cable.switch)
        cables[cable.host].add((cable.nic, cable.switch))
    out: list[dict[str, object]] = []
    for host, reached in sorted(host_leaves.items()):
        ordered = sorted(reached)
        pods = sorted(pod_name.get(leaf, f"pod:{leaf}") for leaf in ordered)
        position: dict[str, object] = {"leaves": ordered, "pod": pods[0]}
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
