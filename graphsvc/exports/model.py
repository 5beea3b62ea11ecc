"""One read of the cluster for every export: hosts, their leaf groups, pods and NVLink domains."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

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


@dataclass
class ClusterView:
    cluster: str
    hosts: list[ExportHost]
    leaf_groups: dict[str, list[str]] = field(default_factory=dict)  # group name -> hosts
    group_of: dict[str, str] = field(default_factory=dict)  # host -> group name
    pods: dict[str, list[str]] = field(default_factory=dict)  # pod name -> group names
    blocks: dict[str, list[str]] = field(default_factory=dict)  # multi-host NVLink domain -> hosts

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


def slug(text: str, limit: int = 63) -> str:
    """A DNS-1123 / label-value safe name; long or lossy names keep a hash suffix to stay unique."""
    clean = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.") or "x"
    if clean != text.lower() or len(clean) > limit:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        clean = f"{clean[: limit - 9].strip('-.')}-{digest}"
    return clean


async def cluster_view(gw: Gateway, cluster: str) -> ClusterView:
    rows = await gw.read("export_hosts", {"cluster": cluster})
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
        )
        for r in rows
    ]
    view = ClusterView(cluster, hosts)
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
    pod_groups: dict[str, set[str]] = defaultdict(set)
    for h in hosts:
        pod_groups[slug(h.pod or "no-pod", 40)].add(view.group_of[h.name])
    view.pods = {p: sorted(g) for p, g in sorted(pod_groups.items())}
    return view
