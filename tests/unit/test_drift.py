"""The drift checker's parsers and diff as table tests over plain text (no store)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.exports.drift import (
    DriftInputError,
    DriftItem,
    Topology,
    diff,
    expand_hostlist,
    parse,
    parse_labels,
    parse_slurm,
    parse_volcano,
)
from graphsvc.exports.hostlist import HostlistError, compress_hostlist


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("", []),
        ("a", ["a"]),
        ("a,b", ["a", "b"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[01-03,7]", ["n01", "n02", "n03", "n7"]),
        ("gpu-[08-10]-x,c", ["gpu-08-x", "gpu-09-x", "gpu-10-x", "c"]),
        ("r[1-2]-t[1-2]", ["r1-t1", "r1-t2", "r2-t1", "r2-t2"]),
    ],
)
def test_expand_hostlist(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["n[1-3", "n]1[", "n[a-b]", "n[3-1]", "n[1-999999]"])
def test_bad_hostlists_are_input_errors(text: str) -> None:
    with pytest.raises(HostlistError):
        expand_hostlist(text)
    with pytest.raises(DriftInputError):
        parse("slurm", f"SwitchName=s Nodes={text}")


@pytest.mark.parametrize(
    ("names", "text"),
    [
        ([], ""),
        (["a"], "a"),
        (["n01", "n02", "n03", "n07"], "n[01-03,07]"),
        (["n3", "n1", "n2", "x"], "n[1-3],x"),
        (["n9", "n10", "n11"], "n9,n[10-11]"),  # digit widths differ: 9 is not 09
        (["r1-t01", "r1-t02", "r2-t01"], "r1-t[01-02],r2-t01"),
        (["gpu-1", "gpu-1"], "gpu-1"),
    ],
)
def test_compress_hostlist(names: list[str], text: str) -> None:
    assert compress_hostlist(names) == text
    assert sorted(expand_hostlist(text)) == sorted(set(names))


TREE = """
# comment
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n3,n4
SwitchName=spine Switches=leaf[1-2]
"""
YAML = """
---
- topology: t
  cluster_default: true
  tree:
    switches:
      - switch: spine
        children: leaf[1-2]
      - switch: leaf1
        nodes: n[1-2]
      - switch: leaf2
        nodes: n3,n4
- topology: b
  block:
    block_sizes: [2, 4]
    blocks:
      - block: b1
        nodes: n[1-2]
      - block: b2
        nodes: n[3-4]
"""
BLOCK = "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2,4\n"


def test_conf_and_yaml_read_the_same() -> None:
    conf = parse_slurm(TREE + BLOCK)
    assert conf.node_parent == {"n1": "leaf1", "n2": "leaf1", "n3": "leaf2", "n4": "leaf2"}
    assert conf.switch_parent == {"leaf1": "spine", "leaf2": "spine", "spine": None}
    assert conf.blocks == {"b1": {"n1", "n2"}, "b2": {"n3", "n4"}} and conf.block_sizes == [2, 4]
    assert diff(conf, parse_slurm(YAML)) == []


def _items(graph: str, deployed: str) -> list[tuple[str, str, str]]:
    return [(i.kind, i.change, i.name) for i in diff(parse_slurm(graph), parse_slurm(deployed))]


@pytest.mark.parametrize(
    ("deployed", "expected"),
    [
        (TREE + BLOCK, []),
        # a host cabled to the other leaf
        (TREE.replace("n[1-2]", "n1").replace("n3,n4", "n2,n3,n4") + BLOCK, [("node", "moved", "n2")]),
        # a leaf switch missing: its hosts are missing too
        (TREE.replace("SwitchName=leaf2 Nodes=n3,n4\n", "").replace("leaf[1-2]", "leaf1") + BLOCK,
         [("node", "missing", "n3"), ("node", "missing", "n4"), ("switch", "missing", "leaf2")]),
        # the spine missing: the leaves at the top are implied by it, not reported again
        (TREE.replace("SwitchName=spine Switches=leaf[1-2]\n", "") + BLOCK, [("switch", "missing", "spine")]),
        # a host the graph does not know, and a switch it does not know
        (TREE.replace("n3,n4", "n3,n4,n9") + "SwitchName=top Switches=spine\n" + BLOCK,
         [("node", "extra", "n9"), ("switch", "moved", "spine"), ("switch", "extra", "top")]),
        # wrong block size
        (TREE + BLOCK.replace("BlockSizes=2,4", "BlockSizes=4"), [("block-size", "changed", "BlockSizes")]),
        # a tray in the wrong block, a block too many
        (TREE + "BlockName=b1 Nodes=n1\nBlockName=b2 Nodes=n[2-4]\nBlockName=b3 Nodes=n5\nBlockSizes=2,4\n",
         [("block", "extra", "b3"), ("block-member", "moved", "n2"), ("block-member", "moved", "n5")]),
    ],
)  # fmt: skip
def test_slurm_diff(deployed: str, expected: list[tuple[str, str, str]]) -> None:
    assert _items(TREE + BLOCK, deployed) == expected


def test_block_size_item_says_both_sides() -> None:
    (item,) = diff(parse_slurm(BLOCK), parse_slurm(BLOCK.replace("2,4", "16")))
    assert item == DriftItem("block-size", "changed", "BlockSizes", expected="2,4", deployed="16")
    assert "deployed 16, graph 2,4" in item.describe()


@pytest.mark.parametrize(
    "text",
    [
        "SwitchName",
        "Nodes=a b",
        "FooName=x",
        "- topology: [",
        "- {tree: 1}",
        "- topology: t\n  tree: {switches: [{nodes: a}]}",
        "- topology: t\n  block: {block_sizes: [x]}",
        "- topology: t\n  tree: {switches: 3}",
    ],
)
def test_unreadable_slurm_copies_are_input_errors(text: str) -> None:
    with pytest.raises(DriftInputError):
        parse("slurm", text)


@pytest.mark.parametrize("kind", ["volcano", "kueue", "labels"])
@pytest.mark.parametrize("text", ["{not: [yaml", "[1, 2]", "kind: List\nitems: 7", "- kind: HyperNode\n  spec: 5"])
def test_unreadable_kubernetes_copies_are_input_errors_or_empty(kind: str, text: str) -> None:
    with contextlib.suppress(DriftInputError):  # the only exception allowed
        parse(kind, text)


def _hypernode(name: str, tier: int, members: list[tuple[str, str]]) -> dict[str, object]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": t, "selector": {"exactMatch": {"name": n}}}
                                               for t, n in members]}}  # fmt: skip


def test_volcano() -> None:
    graph = [_hypernode("nvl", 1, [("Node", "a"), ("Node", "b")]), _hypernode("leaf", 2, [("HyperNode", "nvl"),
             ("Node", "c")])]  # fmt: skip
    text = json.dumps({"kind": "List", "items": graph})
    topo = parse_volcano(text)
    assert topo.node_parent == {"a": "nvl", "b": "nvl", "c": "leaf"} and topo.blocks == {"nvl": {"a", "b"}}
    moved = [_hypernode("nvl", 1, [("Node", "a")]), _hypernode("leaf", 2, [("HyperNode", "nvl"), ("Node", "c"),
             ("Node", "b")])]  # fmt: skip
    items = diff(topo, parse_volcano(json.dumps({"kind": "List", "items": moved})))
    assert [(i.kind, i.change, i.name) for i in items] == [("node", "moved", "b"), ("block-member", "moved", "b")]
    retiered = [_hypernode("nvl", 1, [("Node", "a"), ("Node", "b")]), _hypernode("leaf", 3, [("HyperNode", "nvl"),
                ("Node", "c")])]  # fmt: skip
    items = diff(topo, parse_volcano(json.dumps({"kind": "List", "items": retiered})))
    assert items == [DriftItem("tier", "changed", "leaf", expected="2", deployed="3")]


def test_labels_from_a_node_list_and_from_commands() -> None:
    nodes = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        f"- kind: Node\n  metadata:\n    name: {n}\n    labels:\n      x.io/leaf: {leaf}\n      other: y\n"
        for n, leaf in [("a", "l1"), ("b", "l2"), ("cpu1", "l1")]
    )
    commands = (
        "# header\nkubectl label node a x.io/leaf=l1 --overwrite\nkubectl label node b x.io/leaf=l1 --overwrite\n"
    )
    graph, deployed = parse_labels(commands), parse_labels(nodes)
    assert deployed.labels is not None and deployed.labels["a"] == {"x.io/leaf": "l1", "other": "y"}
    items = diff(graph, deployed)
    assert [(i.kind, i.change, i.name, i.expected, i.deployed) for i in items] == [
        ("label", "moved", "b x.io/leaf", "l1", "l2"),
        ("node", "extra", "cpu1", None, "x.io/leaf=l1"),
    ]
    assert diff(graph, Topology(labels={"a": {"x.io/leaf": "l1"}}))[0].change == "missing"


@given(
    st.lists(
        st.builds(
            lambda prefix, n, width: f"{prefix}{n:0{width}d}",
            st.sampled_from(["n", "gpu-", "r1-t", "a.b-"]),
            st.integers(0, 300),
            st.integers(1, 4),
        )
        | st.sampled_from(["login", "x-y", "head.node"]),
        max_size=60,
    )
)
def test_compress_then_expand_is_the_same_set(names: list[str]) -> None:
    assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(set(names))


def test_export_names_match_the_formats_the_service_renders() -> None:
    from graphsvc.exports.drift_check import KINDS
    from graphsvc.exports.names import DRIFT_FORMATS, EXPORT_FORMATS
    from graphsvc.exports.render import ExportFormat

    assert [f.value for f in ExportFormat] == EXPORT_FORMATS
    assert list(KINDS) == DRIFT_FORMATS
