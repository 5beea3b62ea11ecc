"""Drift of a deployed scheduler copy against the graph: the graph's side comes from `render`.

The graph's export and the deployed copy go through the same parser (graphsvc.exports.drift)
and only the parts the deployed copy has are compared: a tree-only topology.conf is not
told it lacks blocks, a node list labelled only with Topograph's keys is not told it lacks
graphsvc.io labels. What the deployed copy has must then match the graph exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphsvc.exports import drift
from graphsvc.exports.drift import DriftItem, Topology
from graphsvc.exports.model import ExportStamp
from graphsvc.exports.render import ExportFormat, render
from graphsvc.store.gateway import Gateway

KINDS = ("slurm", "kueue", "volcano", "labels")


@dataclass(frozen=True)
class DriftResult:
    kind: str
    cluster: str
    items: list[DriftItem]
    stamp: ExportStamp

    @property
    def drifted(self) -> bool:
        return bool(self.items)

    def summary(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.items:
            key = f"{item.kind} {item.change}"
            out[key] = out.get(key, 0) + 1
        return out


async def check(gw: Gateway, kind: str, deployed_text: str, cluster: str) -> DriftResult:
    """Raises drift.DriftInputError (unreadable copy) or render.ExportError (no such cluster)."""
    if kind not in KINDS:
        raise drift.DriftInputError(f"unknown drift format {kind!r}; known: {', '.join(KINDS)}")
    deployed = drift.parse(kind, deployed_text)
    if kind == "slurm":
        graph, stamp = await _slurm_graph(gw, cluster)
        items = drift.diff(_only_what_is_deployed(graph, deployed), deployed)
    elif kind == "volcano":
        out = await render(gw, ExportFormat.VOLCANO, cluster, None)
        graph, stamp = drift.parse_volcano(out.text), out.stamp
        items = drift.diff(graph, deployed)
    else:
        graph, stamp = await _label_graph(gw, cluster)
        items = _label_drift(kind, graph, deployed)
    return DriftResult(kind, cluster, items, stamp)


async def _slurm_graph(gw: Gateway, cluster: str) -> tuple[Topology, ExportStamp]:
    tree = await render(gw, ExportFormat.SLURM_TREE, cluster, None)
    block = await render(gw, ExportFormat.SLURM_BLOCK, cluster, None)
    graph = drift.parse_slurm(tree.text)
    blocks = drift.parse_slurm(block.text)
    graph.blocks, graph.block_sizes = blocks.blocks, blocks.block_sizes
    return graph, tree.stamp


def _only_what_is_deployed(graph: Topology, deployed: Topology) -> Topology:
    has_tree = bool(deployed.switch_parent or deployed.node_parent)
    has_blocks = bool(deployed.blocks) or deployed.block_sizes is not None
    return Topology(
        node_parent=graph.node_parent if has_tree else {},
        switch_parent=graph.switch_parent if has_tree else {},
        blocks=graph.blocks if has_blocks else {},
        block_sizes=graph.block_sizes if has_blocks else None,
    )


async def _label_graph(gw: Gateway, cluster: str) -> tuple[Topology, ExportStamp]:
    """Every topology label graphsvc writes (its own and Topograph's), and its Kueue Topologies."""
    kueue = await render(gw, ExportFormat.KUEUE_LABELS, cluster, None)
    topograph = await render(gw, ExportFormat.TOPOGRAPH_LABELS, cluster, None)
    topologies = await render(gw, ExportFormat.KUEUE, cluster, None)
    labels = drift.parse_labels(kueue.text).labels or {}
    for host, values in (drift.parse_labels(topograph.text).labels or {}).items():
        labels.setdefault(host, {}).update(values)
    for host, values in labels.items():
        values["kubernetes.io/hostname"] = host
    graph = drift.parse_kueue(topologies.text)
    graph.labels = {k.lower(): v for k, v in labels.items()}
    return graph, kueue.stamp


def _label_drift(kind: str, graph: Topology, deployed: Topology) -> list[DriftItem]:
    items: list[DriftItem] = []
    keys: list[str] | None = None
    if kind == "kueue":
        ours = dict(_level(lv) for lv in graph.levels or [])
        theirs = dict(_level(lv) for lv in deployed.levels or [])
        for name, levels in theirs.items():
            if name not in ours:
                items.append(DriftItem("level", "extra", name, deployed=levels))
            elif ours[name] != levels:
                items.append(DriftItem("level", "changed", name, expected=ours[name], deployed=levels))
        if not set(theirs) & set(ours):
            items += [DriftItem("level", "missing", name, expected=lv) for name, lv in sorted(ours.items())]
        keys = [k for levels in theirs.values() for k in levels.split(" > ") if k != "kubernetes.io/hostname"]
    if deployed.labels is not None and graph.labels is not None:
        present = {k for values in deployed.labels.values() for k in values}
        graph_keys = {k for values in graph.labels.values() for k in values} - {"kubernetes.io/hostname"}
        watched = keys if keys is not None else sorted(graph_keys & present) or sorted(graph_keys)
        deployed_labels = {k.lower(): v for k, v in deployed.labels.items()}
        items += drift.diff(Topology(labels=graph.labels), Topology(labels=deployed_labels), label_keys=watched)
    return items


def _level(text: str) -> tuple[str, str]:
    name, _, levels = text.partition(": ")
    return name, levels
