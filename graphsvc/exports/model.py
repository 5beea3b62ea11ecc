"""One read of the cluster for every export: hosts, their leaf groups, pods and NVLink domains."""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from graphsvc.store.gateway import Gateway


@dataclass
class ExportHost:
    name: str
    rack: str | None
    scalable_unit: str | None
    leaves: list[str]
    pod: str | None
    gpus: int
    model: str | None
    domains: list[str]
    multi_host_domain: str | None = None
    collected_at: float | None = None
    spines: list[str] = field(default_factory=list)  # the switches above its leaves (Host.spines)
    cores: list[str] = field(default_factory=list)  # the switches above those (Host.cores)


@dataclass
class ClusterView:
    cluster: str
    hosts: list[ExportHost]
    leaf_groups: dict[str, list[str]] = field(default_factory=dict)  # group name -> hosts
    group_of: dict[str, str] = field(default_factory=dict)  # host -> group name
    pods: dict[str, list[str]] = field(default_factory=dict)  # pod name -> group names
    tops: dict[str, list[str]] = field(default_factory=dict)  # top switch name -> the pods a core joins
    blocks: dict[str, list[str]] = field(default_factory=dict)  # multi-host NVLink domain -> hosts
    nodes: dict[str, str] = field(default_factory=dict)  # host -> its Kubernetes node name (kubernetes_nodes)
    not_nodes: list[str] = field(default_factory=list)  # why the hosts missing from `nodes` are left out

    @property
    def facts_as_of(self) -> float | None:
        """The newest fact time of the hosts this view was built from."""
        times = [h.collected_at for h in self.hosts if h.collected_at is not None]
        return max(times) if times else None


@dataclass(frozen=True)
class ExportStamp:
    """What every export carries so a deployed copy can say how fresh it is."""

    graph_version: int | None
    facts_as_of: float | None

    @property
    def facts_as_of_iso(self) -> str:
        if self.facts_as_of is None:
            return "unknown"
        return datetime.fromtimestamp(self.facts_as_of, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def comment_lines(self) -> list[str]:
        return [f"# graph version {self.graph_version}, newest fact {self.facts_as_of_iso}"]

    def annotations(self) -> dict[str, str]:
        return {
            "graphsvc.io/graph-version": str(self.graph_version),
            "graphsvc.io/facts-as-of": self.facts_as_of_iso,
        }


_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*")


def is_dns1123_subdomain(text: str) -> bool:
    """What Kubernetes takes as an object or node name: dot-separated DNS labels, lower case."""
    return (
        len(text) <= 253
        and DNS1123_SUBDOMAIN.fullmatch(text) is not None
        and all(len(part) <= 63 for part in text.split("."))
    )


def slug(text: str, limit: int = 63) -> str:
    """A name that is both a DNS-1123 subdomain and a label value, at most `limit` (<= 63) long.

    The name itself where it already is one; any other keeps a hash of the name as it was, so two
    names never share a slug. The hash was added only when characters other than letters' case
    changed, so `Case-Node1` and `case-node1` were one NodeFeature, one ResourceSlice; and `.`
    runs or a `-` beside a `.` (`odd..x`, `a-.b`) passed through into invalid object names.
    """
    clean = re.sub(r"[^a-z0-9.-]+", "-", text.lower())
    clean = re.sub(r"[-.]*\.[-.]*", ".", clean).strip("-.") or "x"
    if clean != text or len(clean) > limit:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        clean = f"{clean[: limit - 9].strip('-.')}-{digest}"
    return clean


def kubernetes_nodes(hosts: list[str]) -> tuple[dict[str, str], list[str]]:
    """Host -> the Kubernetes node it is, and a line for each host left out, saying why.

    A kubelet registers its host name lower-cased as the node's name, so that is the node the
    Kubernetes exports name (nodeName, `kubectl label node`, NodeFeature's node-name label). A
    host whose lower-cased name is no DNS-1123 subdomain (`odd_host`, `odd..x`, a trailing `-`
    or `.`) is no node a kubelet can register: left out. Hosts differing only by case would be
    one node: which of them it is the graph cannot tell, so every one of them is left out (the
    second overwrote the first's labels and slice); an operator renames one.
    """
    by_node: dict[str, list[str]] = defaultdict(list)
    notes: list[str] = []
    for host in hosts:
        node = host.lower()
        if is_dns1123_subdomain(node):
            by_node[node].append(host)
        else:
            notes.append(f"host {host!r} left out: {node!r} is no valid Kubernetes node name (DNS-1123)")
    nodes: dict[str, str] = {}
    for node, named in sorted(by_node.items()):
        if len(named) == 1:
            nodes[named[0]] = node
        else:
            listed = ", ".join(repr(h) for h in sorted(named))
            notes.append(
                f"hosts {listed} left out: all are Kubernetes node {node!r} (node names are host names "
                "lower-cased); rename all but one"
            )
    return nodes, notes


async def cluster_view(gw: Gateway, cluster: str) -> ClusterView:
    rows = await gw.read("export_hosts", {"cluster": cluster})
    return build_view(cluster, rows)


def build_view(cluster: str, rows: list[dict[str, Any]]) -> ClusterView:
    """Pure: the view of the rows `export_hosts` reads (tests build one without a store)."""
    hosts = [
        ExportHost(
            name=r["host"],
            rack=r["rack"],
            scalable_unit=r["scalable_unit"],
            leaves=sorted(r["leaves"] or []),
            pod=r["pod"],
            gpus=int(r["gpus"] or 0),
            model=r["model"],
            # Sorted: the statement collects them in its plan's order, and the first names the
            # host's NVLink clique in exports (a host of several bridged pairs has several).
            domains=sorted(d for d in r["domains"] if d),
            collected_at=float(r["collected_at"]) if r.get("collected_at") is not None else None,
            spines=sorted(r.get("spines") or []),
            cores=sorted(r.get("cores") or []),
        )
        for r in rows
    ]
    view = ClusterView(cluster, hosts)
    view.nodes, view.not_nodes = kubernetes_nodes([h.name for h in hosts])
    members: dict[str, set[str]] = defaultdict(set)
    for h in hosts:
        for d in h.domains:
            members[d].add(h.name)
    for h in hosts:
        spanning = [d for d in h.domains if len(members[d]) > 1]
        h.multi_host_domain = spanning[0] if spanning else None
    view.blocks = {d: sorted(m) for d, m in sorted(members.items()) if len(m) > 1}
    by_leaves: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for h in hosts:
        by_leaves[tuple(h.leaves)].append(h.name)
    for leaves, names in sorted(by_leaves.items()):
        group = f"leafgroup-{slug(leaves[0], 40)}" if leaves else "unconnected"
        if group in view.leaf_groups:  # another leaf set starting with the same leaf (a host cabled apart)
            group = f"{group[:52]}-{hashlib.sha256(' '.join(leaves).encode()).hexdigest()[:8]}"
        view.leaf_groups[group] = sorted(names)
        for n in names:
            view.group_of[n] = group
    _pods_and_tops(view)
    return view


def _pods_and_tops(view: ClusterView) -> None:
    """Each leaf group under one pod, and a top switch over the pods a core joins.

    A group's pod is the one most of its hosts name (a host that lost a cable has none until the
    next fabric import: then the first spine above its leaves, else its first leaf). Pods were
    per host, so a group could sit under two pods, and every pod-less host of any island under
    one "no-pod"; and one top switch went over every pod, joining pods no core joins (leaf
    islands): Slurm, Kueue and Volcano would place jobs across hosts with no path (a probe's cases)."""

    def pod_of(h: ExportHost) -> str | None:
        if h.pod:
            return h.pod
        return f"pod:{h.spines[0]}" if h.spines else f"pod:{h.leaves[0]}" if h.leaves else None

    by_name = {h.name: h for h in view.hosts}
    pod_groups: dict[str, set[str]] = defaultdict(set)
    pod_cores: dict[str, set[str]] = defaultdict(set)
    for group, names in view.leaf_groups.items():
        named = Counter(p for n in names if (p := pod_of(by_name[n])) is not None)
        pod = slug(min(named, key=lambda p: (-named[p], p)) if named else "no-pod", 40)
        pod_groups[pod].add(group)
        pod_cores[pod].update(c for n in names for c in by_name[n].cores)
    view.pods = {p: sorted(g) for p, g in sorted(pod_groups.items())}
    joined: list[list[str]] = []  # pods that share a core, by union
    for pod in view.pods:
        meets = [j for j in joined if any(pod_cores[pod] & pod_cores[other] for other in j)]
        merged = [pod, *(p for j in meets for p in j)]
        joined = [j for j in joined if j not in meets] + [sorted(merged)]
    several = sorted((j for j in joined if len(j) > 1), key=lambda j: (-len(j), j[0]))
    top = f"{slug(view.cluster, 40)}-top"
    view.tops = {top if n == 0 else f"{top}-{n + 1}": pods for n, pods in enumerate(several)}
