"""Where a scheduler's deployed copy of the topology differs from the graph: pure functions.

Both sides are reduced to one `Topology`: which group each node hangs off (a leaf switch,
a HyperNode, a label value), which group each group hangs off, blocks with their nodes,
and block sizes. The graph's side is graphsvc's own export parsed by the same parser as the
deployed copy, so a fresh export always compares equal to the graph. `diff` then reports:

- nodes: missing (in the graph, not deployed), extra (deployed, not in the graph), moved
  (deployed under a different switch / block / label value than the graph has them);
- switches: missing, extra, moved (under a different parent);
- blocks: missing, extra, moved nodes between blocks, and block sizes that differ;
- levels: Kueue Topology levels that differ; tiers: Volcano HyperNode tiers that differ.

Parsers: Slurm topology.conf (tree and block, hostlist expressions such as
``gpu[001-032,040]``), Slurm topology.yaml, Volcano HyperNodes, Kueue Topology objects and
Kubernetes Node lists (``kubectl get nodes -o yaml``) for labels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from graphsvc.errors import InvalidInput
from graphsvc.exports.hostlist import HostlistError, expand_hostlist


class DriftInputError(InvalidInput, ValueError):
    """The deployed copy could not be read as the format it was said to be."""


__all__ = ["DriftInputError", "DriftItem", "Topology", "diff", "expand_hostlist", "parse"]


@dataclass
class Topology:
    node_parent: dict[str, str] = field(default_factory=dict)  # node -> lowest switch / group
    switch_parent: dict[str, str | None] = field(default_factory=dict)  # switch -> parent (None: top)
    blocks: dict[str, set[str]] = field(default_factory=dict)  # block -> nodes
    block_sizes: list[int] | None = None
    levels: list[str] | None = None  # Kueue Topology levels
    labels: dict[str, dict[str, str]] | None = None  # node -> topology labels (label formats)
    tiers: dict[str, int] = field(default_factory=dict)  # Volcano HyperNode -> tier


@dataclass(frozen=True)
class DriftItem:
    kind: str  # node | switch | block | block-size | level | label
    change: str  # missing | extra | moved | changed
    name: str
    expected: str | None = None  # what the graph says
    deployed: str | None = None  # what the deployed copy says

    def describe(self) -> str:
        if self.change == "missing":
            return f"{self.kind} {self.name} is missing from the deployed copy (graph: {self.expected})"
        if self.change == "extra":
            return f"{self.kind} {self.name} is in the deployed copy but not in the graph (deployed: {self.deployed})"
        return f"{self.kind} {self.name} {self.change}: deployed {self.deployed}, graph {self.expected}"


# ---------------------------------------------------------------- parsers


def _conf_fields(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in line.split():
        key, eq, value = part.partition("=")
        if not eq:
            raise DriftInputError(f"expected Key=Value, got {part!r} in line {line!r}")
        out[key.lower()] = value
    return out


def parse_slurm(text: str) -> Topology:
    """topology.conf (tree and/or block lines) or topology.yaml, by content."""
    body = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    body = [line for line in body if line]
    if body and (body[0] == "---" or body[0].startswith("-")):
        return parse_slurm_yaml(text)
    topo = Topology()
    children: dict[str, list[str]] = {}
    for line in body:
        f = _conf_fields(line)
        if "switchname" in f:
            name = f["switchname"]
            topo.switch_parent.setdefault(name, None)
            for n in expand_hostlist(f.get("nodes", "")):
                topo.node_parent[n] = name
            children[name] = expand_hostlist(f.get("switches", ""))
        elif "blockname" in f:
            topo.blocks[f["blockname"]] = set(expand_hostlist(f.get("nodes", "")))
        elif "blocksizes" in f:
            topo.block_sizes = _ints(f["blocksizes"].split(","))
        else:
            raise DriftInputError(f"not a topology.conf line: {line!r}")
    _link(topo, children)
    return topo


def _ints(values: list[Any]) -> list[int]:
    try:
        return [int(str(v).strip()) for v in values]
    except ValueError as exc:
        raise DriftInputError(f"block sizes must be integers: {values!r}") from exc


def _link(topo: Topology, children: dict[str, list[str]]) -> None:
    for parent, kids in children.items():
        for kid in kids:
            topo.switch_parent[kid] = parent


def _load_yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DriftInputError(f"not YAML/JSON: {exc}") from exc


def parse_slurm_yaml(text: str) -> Topology:
    doc = _load_yaml(text)
    if not isinstance(doc, list):
        raise DriftInputError("topology.yaml must be a list of topologies")
    topo = Topology()
    children: dict[str, list[str]] = {}
    for entry in doc:
        if not isinstance(entry, dict) or "topology" not in entry:
            raise DriftInputError("each topology.yaml entry needs a 'topology' name")
        tree = entry.get("tree")
        block = entry.get("block")
        if isinstance(tree, dict):
            for sw in tree.get("switches") or []:
                name = str(sw["switch"])
                topo.switch_parent.setdefault(name, None)
                for n in expand_hostlist(str(sw.get("nodes") or "")):
                    topo.node_parent[n] = name
                children[name] = expand_hostlist(str(sw.get("children") or ""))
        if isinstance(block, dict):
            for b in block.get("blocks") or []:
                topo.blocks[str(b["block"])] = set(expand_hostlist(str(b.get("nodes") or "")))
            if block.get("block_sizes") is not None:
                topo.block_sizes = _ints(list(block["block_sizes"]))
    _link(topo, children)
    return topo


def _items(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return [i for i in doc["items"] if isinstance(i, dict)]
    if isinstance(doc, list):
        return [i for i in doc if isinstance(i, dict)]
    if isinstance(doc, dict):
        return [doc]
    raise DriftInputError("expected a Kubernetes object or List")


def _k8s_items(text: str) -> list[dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise DriftInputError(f"not YAML/JSON: {exc}") from exc
    out: list[dict[str, Any]] = []
    for d in docs:
        out += _items(d)
    return out


def parse_volcano(text: str) -> Topology:
    """HyperNodes: a Node member hangs off its HyperNode; tier-1 HyperNodes are also blocks."""
    topo = Topology()
    children: dict[str, list[str]] = {}
    for item in _k8s_items(text):
        if item.get("kind") != "HyperNode":
            continue
        name = str(item.get("metadata", {}).get("name"))
        spec = item.get("spec") or {}
        topo.switch_parent.setdefault(name, None)
        kids: list[str] = []
        nodes: set[str] = set()
        for m in spec.get("members") or []:
            target = ((m.get("selector") or {}).get("exactMatch") or {}).get("name")
            if target is None:
                continue  # regex / label selectors: not comparable by name
            if m.get("type") == "Node":
                topo.node_parent[str(target)] = name
                nodes.add(str(target))
            else:
                kids.append(str(target))
        children[name] = kids
        if spec.get("tier") is not None:
            topo.tiers[name] = int(spec["tier"])
        if spec.get("tier") == 1:
            topo.blocks[name] = nodes
    _link(topo, children)
    return topo


def parse_kueue(text: str) -> Topology:
    """Kueue Topology objects (their levels); Nodes in the same file add their labels."""
    topo = Topology(levels=[])
    items = _k8s_items(text)
    for item in items:
        if item.get("kind") == "Topology":
            name = str(item.get("metadata", {}).get("name"))
            levels = [str(lv.get("nodeLabel")) for lv in (item.get("spec") or {}).get("levels") or []]
            assert topo.levels is not None
            topo.levels.append(f"{name}: {' > '.join(levels)}")
    if any(i.get("kind") == "Node" for i in items):
        topo.labels = parse_labels(text).labels
    return topo


def parse_labels(text: str) -> Topology:
    """``kubectl get nodes -o yaml|json`` (a List of Nodes) or graphsvc's `kubectl label` commands."""
    labels: dict[str, dict[str, str]] = {}
    stripped = text.lstrip()
    if stripped.startswith("#") or stripped.startswith("kubectl"):
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[:3] == ["kubectl", "label", "node"]:
                pairs = [p for p in parts[4:] if "=" in p and not p.startswith("--")]
                labels[parts[3]] = dict(p.split("=", 1) for p in pairs)
        return Topology(labels=labels)
    for item in _k8s_items(text):
        if item.get("kind", "Node") != "Node":
            continue
        meta = item.get("metadata") or {}
        labels[str(meta.get("name"))] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    return Topology(labels=labels)


PARSERS = {"slurm": parse_slurm, "volcano": parse_volcano, "kueue": parse_kueue, "labels": parse_labels}


def parse(kind: str, text: str) -> Topology:
    """A deployed copy read as `kind`; anything unreadable is a DriftInputError, never a crash."""
    if kind not in PARSERS:
        raise DriftInputError(f"unknown drift format {kind!r}; known: {', '.join(PARSERS)}")
    try:
        return PARSERS[kind](text)
    except DriftInputError:
        raise
    except HostlistError as exc:
        raise DriftInputError(str(exc)) from exc
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise DriftInputError(f"not a {kind} topology: {type(exc).__name__} {exc}") from exc


# ---------------------------------------------------------------- diff


def _diff_map(kind: str, graph: dict[str, Any], deployed: dict[str, Any]) -> list[DriftItem]:
    out: list[DriftItem] = []
    for name in sorted(set(graph) | set(deployed)):
        if name not in deployed:
            out.append(DriftItem(kind, "missing", name, expected=_s(graph[name])))
        elif name not in graph:
            out.append(DriftItem(kind, "extra", name, deployed=_s(deployed[name])))
        elif graph[name] != deployed[name]:
            out.append(DriftItem(kind, "moved", name, expected=_s(graph[name]), deployed=_s(deployed[name])))
    return out


def _s(value: Any) -> str:
    if value is None:
        return "top level"
    if isinstance(value, set | frozenset):
        return ",".join(sorted(value))
    return str(value)


def diff(graph: Topology, deployed: Topology, *, label_keys: list[str] | None = None) -> list[DriftItem]:
    """Everything that differs, sorted by kind then name; [] means no drift."""
    out = _diff_map("node", graph.node_parent, deployed.node_parent)
    switches = _diff_map("switch", graph.switch_parent, deployed.switch_parent)
    gone = {i.name for i in switches if i.change == "missing"}
    # a switch under a missing switch sits at the top of the deployed copy: implied, not news
    out += [i for i in switches if not (i.change == "moved" and i.deployed == "top level" and i.expected in gone)]
    out += _diff_blocks(graph, deployed)
    for name in sorted(set(graph.tiers) & set(deployed.tiers)):
        if graph.tiers[name] != deployed.tiers[name]:
            out.append(DriftItem("tier", "changed", name, str(graph.tiers[name]), str(deployed.tiers[name])))
    if graph.block_sizes != deployed.block_sizes:
        sizes = (_sizes(graph.block_sizes), _sizes(deployed.block_sizes))
        out.append(DriftItem("block-size", "changed", "BlockSizes", *sizes))
    if graph.levels is not None and deployed.levels is not None:
        out += _diff_map(
            "level", dict(_split_level(lv) for lv in graph.levels), dict(_split_level(lv) for lv in deployed.levels)
        )
    if graph.labels is not None and deployed.labels is not None:
        out += _diff_labels(graph.labels, deployed.labels, label_keys)
    return out


def _sizes(sizes: list[int] | None) -> str:
    return ",".join(str(s) for s in sizes) if sizes else "(none)"


def _split_level(text: str) -> tuple[str, str]:
    name, _, levels = text.partition(": ")
    return name, levels


def _diff_blocks(graph: Topology, deployed: Topology) -> list[DriftItem]:
    out: list[DriftItem] = []
    g_of = {n: b for b, nodes in graph.blocks.items() for n in nodes}
    d_of = {n: b for b, nodes in deployed.blocks.items() for n in nodes}
    for name in sorted(set(graph.blocks) - set(deployed.blocks)):
        out.append(DriftItem("block", "missing", name, expected=f"{len(graph.blocks[name])} nodes"))
    for name in sorted(set(deployed.blocks) - set(graph.blocks)):
        out.append(DriftItem("block", "extra", name, deployed=f"{len(deployed.blocks[name])} nodes"))
    for node in sorted(set(g_of) | set(d_of)):
        if g_of.get(node) != d_of.get(node):
            out.append(
                DriftItem(
                    "block-member",
                    "moved",
                    node,
                    expected=g_of.get(node) or "(no block)",
                    deployed=d_of.get(node) or "(no block)",
                )
            )
    return out


def _diff_labels(
    graph: dict[str, dict[str, str]], deployed: dict[str, dict[str, str]], keys: list[str] | None
) -> list[DriftItem]:
    """Nodes the graph knows vs nodes deployed; only the graph's topology label keys are compared."""
    out: list[DriftItem] = []
    watched = set(keys or [k for labels in graph.values() for k in labels])
    for node in sorted(set(graph) | set(deployed)):
        if node not in deployed:
            out.append(DriftItem("node", "missing", node, expected=_pairs(graph[node])))
            continue
        if node not in graph:
            mine = {k: v for k, v in deployed[node].items() if k in watched}
            if mine:  # a node graphsvc does not know but which carries its labels
                out.append(DriftItem("node", "extra", node, deployed=_pairs(mine)))
            continue
        for key in sorted(watched):
            want, have = graph[node].get(key), deployed[node].get(key)
            if want != have:
                out.append(
                    DriftItem(
                        "label",
                        "moved" if want and have else "changed",
                        f"{node} {key}",
                        expected=want or "(unset)",
                        deployed=have or "(unset)",
                    )
                )
    return out


def _pairs(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def lower_names(topo: Topology) -> Topology:
    """Kubernetes node names are the lower-cased host names."""
    if topo.labels is not None:
        topo.labels = {k.lower(): v for k, v in topo.labels.items()}
    topo.node_parent = {k.lower(): v for k, v in topo.node_parent.items()}
    return topo


def report_json(items: list[DriftItem]) -> str:
    return json.dumps([item.__dict__ for item in items], indent=2)
