"""An independent brute-force placement checker over the exported graph (networkx).

It shares no code with graphsvc.placement: it rebuilds adjacency from the raw NVLINK,
IN_DOMAIN and UPLINK relationships, counts hops as shortest up-then-down paths in the switch
graph (UPLINK points up: fat-tree routing goes up to a switch above both hosts and down again),
and decides whether a request is satisfiable by enumerating host subsets. Clusters in
these tests are small (a handful of hosts), so brute force is affordable.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.placement.shape import JobShape, ShapedPlacement, Tier
from graphsvc.store.gateway import Gateway


@dataclass
class Snapshot:
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_of: dict[str, str] = field(default_factory=dict)
    domain_of: dict[str, str] = field(default_factory=dict)
    domain_kind: dict[str, str] = field(default_factory=dict)
    nvlink: nx.Graph = field(default_factory=nx.Graph)  # GPU-GPU adjacency (direct or shared switch)
    nic_of: dict[str, dict[str, Any]] = field(default_factory=dict)  # GPU uuid -> affine NIC
    leaves_of_host: dict[str, set[str]] = field(default_factory=dict)
    switches: nx.DiGraph = field(default_factory=nx.DiGraph)  # lower -> upper (UPLINK)
    cluster_of_host: dict[str, str] = field(default_factory=dict)  # one fabric each: no set spans two

    def hosts(self) -> list[str]:
        return sorted(set(self.host_of.values()))


async def snapshot(gw: Gateway) -> Snapshot:
    s = Snapshot()
    nodes = await gw.read("export_nodes", {"limit": 1_000_000})
    rels = await gw.read("export_relationships", {"limit": 1_000_000})
    nics: dict[str, dict[str, Any]] = {}
    for n in nodes:
        label, props = n["labels"][0], n["props"]
        if label == "GPU":
            s.gpus[props["uuid"]] = props
            s.nvlink.add_node(props["uuid"])
        elif label == "NVLinkDomain":
            s.domain_kind[props["uuid"]] = props.get("kind", "")
        elif label == "NIC":
            nics[props["uuid"]] = dict(props)
        elif label == "Switch":
            s.switches.add_node(props["name"])
        elif label == "Host":
            s.cluster_of_host[props["name"]] = props.get("cluster") or ""
    switch_members: dict[str, list[str]] = {}
    nic_leaf: dict[str, str] = {}
    for r in rels:
        t, a, b = r["type"], r["from_key"], r["to_key"]
        if t == "HAS_GPU":
            s.host_of[b] = a
        elif t == "IN_DOMAIN":
            s.domain_of[a] = b
        elif t == "NVLINK" and r["to_labels"][0] == "GPU":
            s.nvlink.add_edge(a, b)
        elif t == "NVLINK":
            switch_members.setdefault(b, []).append(a)
        elif t == "UPLINK" and r["from_labels"][0] == "NIC":
            nic_leaf[a] = b
        elif t == "UPLINK":
            s.switches.add_edge(a, b)
        elif t == "NIC_AFFINITY":
            s.nic_of[a] = {"nic": b, "via": r["props"].get("via")}
    for members in switch_members.values():
        s.nvlink.add_edges_from(itertools.combinations(members, 2))
    by_domain: dict[str, list[str]] = {}
    for gpu, dom in s.domain_of.items():
        by_domain.setdefault(dom, []).append(gpu)
    for dom, members in by_domain.items():
        if s.domain_kind.get(dom) == "fabric-clique":
            s.nvlink.add_edges_from(itertools.combinations(members, 2))
    for aff in s.nic_of.values():
        nic = nics.get(aff["nic"], {})
        aff["rail"] = nic.get("rail")
        aff["leaf"] = nic_leaf.get(aff["nic"])
    for nic_key, leaf in nic_leaf.items():
        host = nics.get(nic_key, {}).get("host")
        if host:
            s.leaves_of_host.setdefault(host, set()).add(leaf)
    return s


def hops(s: Snapshot, a: str, b: str) -> int | None:
    if a == b:
        return 0
    la, lb = s.leaves_of_host.get(a, set()), s.leaves_of_host.get(b, set())
    best: int | None = None
    for x in la:
        up_x = _up(s, x)
        for y in lb:
            up_y = _up(s, y)
            for top in up_x.keys() & up_y.keys():
                d = up_x[top] + up_y[top] + 1
                best = d if best is None else min(best, d)
    return best


def _up(s: Snapshot, switch: str) -> dict[str, int]:
    """Switches reachable upwards from one (itself included), with how many links up."""
    if switch not in s.switches:
        return {switch: 0}
    return dict(nx.single_source_shortest_path_length(s.switches, switch))


def eligible(s: Snapshot, uuid: str, req: PlacementRequest) -> bool:
    g = s.gpus[uuid]
    if g.get("state") != "free" or s.host_of[uuid] in req.exclude_hosts or g.get("mig_mode"):
        return False
    if req.model_match is not None and not req.model_match.matches(g.get("model", "")):
        return False
    if req.min_memory_gib is not None and (g.get("memory_mib") is None or g["memory_mib"] < req.min_memory_gib * 1024):
        return False
    if req.exclude_unhealthy and g.get("health") in ("failed", "degraded"):
        return False
    if (
        req.max_temperature_c is not None
        and g.get("temperature_c") is not None
        and g["temperature_c"] > req.max_temperature_c
    ):
        return False
    return not (req.gpu_nic_affinity and s.nic_of.get(uuid, {}).get("via") != "pcie-switch")


def _group_ok(s: Snapshot, gpus: list[str], nvlink: NVLinkRequirement, same_domain: bool) -> bool:
    if len(gpus) <= 1:
        return True  # no pair to connect
    if nvlink is NVLinkRequirement.FULL_MESH and not all(
        s.nvlink.has_edge(a, b) for a, b in itertools.combinations(gpus, 2)
    ):
        return False
    if nvlink is not NVLinkRequirement.NONE or same_domain:
        doms = {s.domain_of.get(g) for g in gpus}
        if len(doms) != 1 or None in doms:
            return False
    return True


def check_candidate(s: Snapshot, req: PlacementRequest, gpus: list[str]) -> list[str]:
    """Every violated constraint of a returned candidate (empty when valid)."""
    problems: list[str] = []
    if len(gpus) != req.gpus or len(set(gpus)) != len(gpus):
        problems.append(f"gpus: {len(set(gpus))} distinct, asked {req.gpus}")
    problems += [f"{g}: not eligible" for g in gpus if not eligible(s, g, req)]
    hosts = sorted({s.host_of[g] for g in gpus})
    by_host = {h: [g for g in gpus if s.host_of[g] == h] for h in hosts}
    if req.gpus_per_host is not None:
        if any(len(v) != req.gpus_per_host for v in by_host.values()):
            problems.append("gpusPerHost: uneven split")
        for h, share in by_host.items():
            if not _group_ok(s, share, req.nvlink, req.same_nvlink_domain):
                problems.append(f"nvlink: share on {h}")
    elif not _group_ok(s, gpus, req.nvlink, req.same_nvlink_domain):
        problems.append("nvlink: whole set")
    if len(hosts) > 1 and req.max_ib_hops is not None:
        for a, b in itertools.combinations(hosts, 2):
            distance = hops(s, a, b)
            if distance is None or distance > req.max_ib_hops:
                problems.append(f"maxIbHops: {a}-{b} is {distance}")
    if req.max_ib_hops == 0 and len(hosts) > 1:
        problems.append("maxIbHops: 0 means one host")
    if not req.cross_site and len({s.cluster_of_host.get(h, "") for h in hosts}) > 1:
        problems.append("cluster: the hosts are in two clusters (two fabrics)")
    if req.rail_aligned and len(hosts) > 1:
        keys = set()
        for share in by_host.values():
            pairs = frozenset((s.nic_of.get(g, {}).get("rail"), s.nic_of.get(g, {}).get("leaf")) for g in share)
            if any(r is None or leaf is None for r, leaf in pairs):
                problems.append("railAligned: a GPU without a cabled rail NIC")
            if len(pairs) != len(share):
                problems.append("railAligned: two GPUs of a host on one rail")
            keys.add(pairs)
        if len(keys) != 1:
            problems.append("railAligned: hosts use different rails or leaves")
    return problems


def feasible(s: Snapshot, req: PlacementRequest) -> bool:
    """Does any placement satisfy every hard constraint? Enumerates host subsets."""
    elig: dict[str, list[str]] = {h: [] for h in s.hosts()}
    for uuid in s.gpus:
        if eligible(s, uuid, req):
            elig[s.host_of[uuid]].append(uuid)
    hosts = [h for h, g in elig.items() if g]
    p = req.gpus_per_host
    sizes = [req.gpus // p] if p else range(1, len(hosts) + 1)
    for k in sizes:
        if req.max_ib_hops == 0 and k > 1:
            continue
        for group in itertools.combinations(hosts, k):
            too_far = (
                k > 1
                and req.max_ib_hops is not None
                and any((hops(s, a, b) or 99) > req.max_ib_hops for a, b in itertools.combinations(group, 2))
            )
            if too_far or (not req.cross_site and len({s.cluster_of_host.get(h, "") for h in group}) > 1):
                continue
            if _group_feasible(s, req, group, elig):
                return True
    return False


def _has_subset(s: Snapshot, pool: list[str], k: int, nvlink: NVLinkRequirement, same_domain: bool) -> bool:
    if len(pool) < k:
        return False
    if k <= 1 or (nvlink is NVLinkRequirement.NONE and not same_domain):
        return True
    by_dom: dict[str | None, list[str]] = {}
    for g in pool:
        by_dom.setdefault(s.domain_of.get(g), []).append(g)
    for dom, members in by_dom.items():
        if dom is None or len(members) < k:
            continue
        if nvlink is not NVLinkRequirement.FULL_MESH:
            return True
        clique = max((len(c) for c in nx.find_cliques(s.nvlink.subgraph(members))), default=0)
        if clique >= k:
            return True
    return False


def _group_feasible(s: Snapshot, req: PlacementRequest, group: tuple[str, ...], elig: dict[str, list[str]]) -> bool:
    p = req.gpus_per_host
    if req.rail_aligned and len(group) > 1:
        if p is None and req.gpus % len(group):
            return False  # rail alignment: the same share on every host
        return _aligned_feasible(s, req, group, elig, p or req.gpus // len(group), whole_set=p is None)
    if p:
        return all(_has_subset(s, elig[h], p, req.nvlink, req.same_nvlink_domain) for h in group)
    pool = [g for h in group for g in elig[h]]
    return _has_subset(s, pool, req.gpus, req.nvlink, req.same_nvlink_domain)


def _pair(s: Snapshot, g: str) -> tuple[Any, Any] | None:
    nic = s.nic_of.get(g, {})
    return (nic["rail"], nic["leaf"]) if nic.get("rail") is not None and nic.get("leaf") else None


def _aligned_feasible(
    s: Snapshot, req: PlacementRequest, group: tuple[str, ...], elig: dict[str, list[str]], p: int, *, whole_set: bool
) -> bool:
    """p GPUs on each host of the group, one per (rail, leaf) pair, the same p pairs on every host;
    the NVLink requirement on each host's share (a per-host split) or on the whole set (none)."""
    on: dict[str, dict[tuple[Any, Any], list[str]]] = {}
    for h in group:
        for g in elig[h]:
            pair = _pair(s, g)
            if pair is not None:
                on.setdefault(h, {}).setdefault(pair, []).append(g)
    common = set.intersection(*(set(on.get(h, {})) for h in group))
    for rails in itertools.combinations(sorted(common, key=str), p):
        shares = [list(itertools.product(*(on[h][r] for r in rails))) for h in group]
        if whole_set:
            if any(
                _group_ok(s, [g for share in choice for g in share], req.nvlink, req.same_nvlink_domain)
                for choice in itertools.product(*shares)
            ):
                return True
            continue
        if all(any(_group_ok(s, list(x), req.nvlink, req.same_nvlink_domain) for x in mine) for mine in shares):
            return True
    return False


def check_shaped(s: Snapshot, shape: JobShape, p: ShapedPlacement) -> list[str]:
    """Every violated rule of a shaped answer, judged from the raw graph (no service code)."""
    problems: list[str] = []
    req = shape.gpu_request()
    uuids = [r.gpu_uuid for r in p.ranks]
    if sorted(r.rank for r in p.ranks) != list(range(shape.ranks)):
        problems.append("ranks are not 0..n-1")
    if len(set(uuids)) != shape.ranks:
        problems.append("a GPU used twice or the wrong count")
    problems += [f"{u}: not eligible" for u in uuids if not eligible(s, u, req)]
    by_group: dict[tuple[int, int], list[str]] = {}
    for r in p.ranks:
        by_group.setdefault((r.pp_rank, r.dp_rank), []).append(r.gpu_uuid)
        if r.rank != r.tp_rank + shape.tp * (r.dp_rank + shape.dp * r.pp_rank):
            problems.append(f"rank {r.rank}: not Megatron order")
    if len(by_group) != shape.groups or any(len(v) != shape.tp for v in by_group.values()):
        problems.append("groups are not pp*dp groups of tp")
    if shape.job_level.required and shape.job_level.tier is Tier.LEAF:
        hosts = {r.host for r in p.ranks}
        if not set.intersection(*(s.leaves_of_host.get(h, set()) for h in hosts)):
            problems.append("job: hosts share no leaf although the leaf level is required")
    if shape.group_level.required and shape.group_level.tier is Tier.NVLINK_DOMAIN:
        for key, members in by_group.items():
            doms = {s.domain_of.get(u) for u in members}
            if len(doms) != 1 or None in doms:
                problems.append(f"group {key}: not inside one NVLink domain")
    return problems


def oracle_groups(s: Snapshot, shape: JobShape, hosts: set[str] | None = None) -> int:
    """How many disjoint TP groups inside one NVLink domain exist (on these hosts), by brute force."""
    req = shape.gpu_request()
    by_domain: dict[str, list[str]] = {}
    for u, d in s.domain_of.items():
        if eligible(s, u, req) and (hosts is None or s.host_of[u] in hosts):
            by_domain.setdefault(d, []).append(u)
    return sum(_most_groups(s, sorted(members), shape.tp) for members in by_domain.values())


def _most_groups(s: Snapshot, pool: list[str], tp: int) -> int:
    """Disjoint NVLink cliques of size tp in one domain (greedy is exact in switched domains)."""
    count = 0
    rest = pool
    while len(rest) >= tp:
        combo = next(
            (
                c
                for c in itertools.combinations(rest, tp)
                if all(s.nvlink.has_edge(a, b) for a, b in itertools.combinations(c, 2))
            ),
            None,
        )
        if combo is None:
            return count
        count += 1
        rest = [u for u in rest if u not in combo]
    return count


def shaped_feasible(s: Snapshot, shape: JobShape) -> bool:
    """Can the job be placed with every TP group in one NVLink domain and, when the job level is
    a required leaf, every group on hosts that share one leaf? (Other levels: cluster-wide.)"""
    if shape.job_level.required and shape.job_level.tier is Tier.LEAF:
        leaves = set().union(*s.leaves_of_host.values()) if s.leaves_of_host else set()
        return any(
            oracle_groups(s, shape, {h for h, ls in s.leaves_of_host.items() if leaf in ls}) >= shape.groups
            for leaf in leaves
        )
    return oracle_groups(s, shape) >= shape.groups
