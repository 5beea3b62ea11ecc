"""Slurm topology.yaml, Topograph labels, NFD, DRA and export freshness, against schemas and the graph."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from graphsvc.exports.drift import diff, parse_labels, parse_slurm
from graphsvc.exports.hostlist import expand_hostlist
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "schemas"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
TOPOGRAPH = "network.topology.nvidia.com"


@pytest.fixture
async def demo(gateway: Gateway) -> SyntheticCluster:
    return await load(gateway, "demo:sus=1,nvl72_racks=2,a100_hosts=2,l40s_hosts=2")


async def get(client: httpx.AsyncClient, fmt: str, **params: str) -> str:
    resp = await client.get(f"/v1/export/{fmt}", params=params)
    assert resp.status_code == 200, resp.text
    return resp.text


def schema(name: str) -> dict[str, Any]:
    path = SCHEMAS / name
    if name.endswith(".json"):
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded
    crd = yaml.safe_load(path.read_text())
    out: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return out


async def test_topology_yaml_follows_the_documented_grammar(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    text = await get(client, "slurm-yaml")
    doc = yaml.safe_load(text)
    jsonschema.validate(doc, schema("slurm-topology-yaml.schema.json"))
    assert [t["topology"] for t in doc] == ["fabric", "nvlink"]
    assert [t.get("cluster_default") for t in doc] == [True, False]
    switches = doc[0]["tree"]["switches"]
    names = [s["switch"] for s in switches]
    assert len(names) == len(set(names))
    for s in switches:
        assert ("nodes" in s) != ("children" in s)
        for child in expand_hostlist(s.get("children", "")):
            assert not child or child in names
    leaves = [n for s in switches for n in expand_hostlist(s.get("nodes", ""))]
    assert sorted(leaves) == sorted(h.hostname for h in demo.hosts)  # every node under one leaf switch
    block = doc[1]["block"]
    sizes = block["block_sizes"]
    assert sizes[0] == 18  # block size = NVLink domain size: 18 trays of an NVL72 rack
    for a, b in itertools.pairwise(sizes):
        assert b % a == 0 and (b // a) & (b // a - 1) == 0
    assert all(len(expand_hostlist(b["nodes"])) == 18 for b in block["blocks"]) and len(block["blocks"]) == 2
    assert [b["nodes"] for b in block["blocks"]] == ["gb200-rack01-t[01-18]", "gb200-rack02-t[01-18]"]
    # the same topology as the topology.conf exports, by the drift checker's reading
    tree_conf, block_conf = await get(client, "slurm-tree"), await get(client, "slurm-block")
    both = parse_slurm(tree_conf)
    blocks = parse_slurm(block_conf)
    both.blocks, both.block_sizes = blocks.blocks, blocks.block_sizes
    assert diff(both, parse_slurm(text)) == []


async def test_every_export_says_how_fresh_it_is(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    newest = max(h.collected_at for h in demo.hosts).strftime("%Y-%m-%dT%H:%M:%SZ")
    for fmt in ["slurm-tree", "slurm-block", "slurm-yaml", "slurm-gres", "slurm-nodes", "kueue-labels",
                "topograph-labels"]:  # fmt: skip
        resp = await client.get(f"/v1/export/{fmt}")
        assert resp.headers["x-graphsvc-facts-as-of"] == newest
        version = resp.headers["x-graphsvc-graph-version"]
        assert f"# graph version {version}, newest fact {newest}" in resp.text.splitlines()[:3], fmt
    for fmt in ["kueue", "volcano", "nfd", "dra"]:
        for item in json.loads(await get(client, fmt))["items"]:
            assert item["metadata"]["annotations"]["graphsvc.io/facts-as-of"] == newest, fmt
    host = next(h for h in demo.hosts if h.hostname == "a100-001")
    resp = await client.get("/v1/export/nccl", params={"host": "a100-001"})
    assert resp.headers["x-graphsvc-facts-as-of"] == host.collected_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    metrics = (await client.get("/metrics")).text
    for fmt in ["slurm-tree", "dra", "nccl"]:
        assert re.search(rf'graphsvc_export_last_pull_age_seconds{{format="{fmt}"}} [0-9.e+-]+', metrics), fmt
    assert 'graphsvc_export_last_pull_age_seconds{format="slurm-nodes"}' in metrics
    assert 'format="bogus"' not in metrics


async def test_topograph_labels(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    labels = parse_labels(await get(client, "topograph-labels")).labels
    assert labels is not None and set(labels) == {h.hostname for h in demo.hosts}
    for values in labels.values():
        assert set(values) <= {f"{TOPOGRAPH}/{k}" for k in ("accelerator", "leaf", "spine", "core")}
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in values.values())
    racks = {labels[h.hostname][f"{TOPOGRAPH}/accelerator"] for h in demo.hosts if h.hostname.startswith("gb200")}
    assert len(racks) == 2  # one accelerated (NVLink) domain per NVL72 rack
    assert not any(f"{TOPOGRAPH}/accelerator" in labels[h.hostname] for h in demo.hosts if h.hostname[:4] == "h100")
    su1 = {labels[h.hostname][f"{TOPOGRAPH}/leaf"] for h in demo.hosts if h.scalable_unit == "h100-su1"}
    assert len(su1) == 1
    # a Kueue Topology over those labels, valid against Kueue's CRD
    kueue = json.loads(await get(client, "kueue"))["items"]
    for topo in kueue:
        jsonschema.validate(topo, schema("kueue-topology-crd.yaml"))
    topograph = next(t for t in kueue if t["metadata"]["name"].startswith("topograph-"))
    assert [lv["nodeLabel"] for lv in topograph["spec"]["levels"]] == [
        f"{TOPOGRAPH}/spine", f"{TOPOGRAPH}/leaf", "kubernetes.io/hostname"
    ]  # fmt: skip


async def test_nfd_feature_files_and_node_features(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    text = await get(client, "nfd", host="gb200-rack01-t01")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    features = dict(line.split("=", 1) for line in lines)
    labels = parse_labels(await get(client, "topograph-labels")).labels
    assert labels is not None and features == labels["gb200-rack01-t01"]
    assert (await client.get("/v1/export/nfd", params={"host": "nope"})).status_code == 404
    items = json.loads(await get(client, "nfd"))["items"]
    crd = schema("nfd-nodefeature-crd.yaml")
    assert {i["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] for i in items} == {
        h.hostname for h in demo.hosts
    }
    for item in items:
        jsonschema.validate(item, crd)
        node = item["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
        assert item["spec"]["labels"] == labels[node]


async def test_dra_resource_slices(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    slices = {s["spec"]["nodeName"]: s for s in json.loads(await get(client, "dra"))["items"]}
    rs_schema = schema("k8s-resourceslice-v1.schema.json")
    assert set(slices) == {h.hostname for h in demo.hosts if h.gpus}
    qualified = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]{1,32}$")
    for s in slices.values():
        jsonschema.validate(s, rs_schema)
        assert len(s["spec"]["devices"]) <= 128
        for d in s["spec"]["devices"]:
            assert len(d["attributes"]) + len(d.get("capacity", {})) <= 32
            for name, value in d["attributes"].items():
                assert qualified.match(name), name
                assert len(value) == 1 and len(str(next(iter(value.values())))) <= 64
    by_host = {h.hostname: h for h in demo.hosts}
    h100 = slices["h100-su1-n01"]["spec"]["devices"]
    facts = by_host["h100-su1-n01"].gpus
    for d, g in zip(h100, facts, strict=True):
        assert d["attributes"]["uuid"] == {"string": g.uuid}
        # the root of the GPU's PCIe path: GPUs behind one switch share it
        root = g.pcie_path[0] if g.pcie_path else g.pci_bus_id
        assert root is not None
        assert d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"] == "pci" + root.rsplit(":", 1)[0]
        assert "gpu.graphsvc.io/computeDomain" not in d["attributes"]  # NVLink inside one host only
    cliques = {
        d["attributes"]["gpu.graphsvc.io/computeDomain"]["string"]
        for name, s in slices.items()
        if name.startswith("gb200-rack01")
        for d in s["spec"]["devices"]
    }
    assert len(cliques) == 1  # one ComputeDomain / NVLink clique spans the rack's 18 trays
    assert len({d["attributes"]["gpu.graphsvc.io/nvlinkClique"]["string"] for d in h100}) == 1
