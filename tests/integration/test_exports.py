"""Exports for Slurm, Kueue, Volcano and NCCL, checked against CRD schemas and the graph."""

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
from topo_collector.importers import ImportOptions, parse_nccl_xml
from topo_facts import HostFacts

from graphsvc.exports.hostlist import expand_hostlist
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "schemas"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def crd_schema(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((SCHEMAS / name).read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture
async def demo(gateway: Gateway) -> SyntheticCluster:
    return await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")


async def get(client: httpx.AsyncClient, fmt: str, **params: str) -> str:
    resp = await client.get(f"/v1/export/{fmt}", params=params)
    assert resp.status_code == 200, resp.text
    return resp.text


def parse_slurm(text: str) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = dict(part.split("=", 1) for part in line.split())
        name = fields.pop("SwitchName", None) or fields.pop("BlockName", None) or "BlockSizes"
        out[name] = {k: expand_hostlist(v) for k, v in fields.items()}
    return out


async def test_slurm_tree_parses_back_to_the_graph(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    tree = parse_slurm(await get(client, "slurm-tree"))
    leaf_level = {n: v["Nodes"] for n, v in tree.items() if "Nodes" in v}
    seen = [h for hosts in leaf_level.values() for h in hosts]
    assert sorted(seen) == sorted(h.hostname for h in demo.hosts)  # every host exactly once
    leaves = {h.hostname: frozenset(u.switch for u in demo.nic_uplinks if u.host == h.hostname) for h in demo.hosts}
    for hosts in leaf_level.values():
        assert len({leaves[h] for h in hosts}) == 1  # a leaf-level switch = hosts on the same leaves
    uppers = {n: v["Switches"] for n, v in tree.items() if "Switches" in v}
    children = [c for cs in uppers.values() for c in cs]
    assert set(leaf_level) <= set(children) and all(c in tree for c in children)
    su1 = [h.hostname for h in demo.hosts if h.scalable_unit == "h100-su1"]
    assert any(sorted(hosts) == sorted(su1) for hosts in leaf_level.values())


async def test_slurm_blocks_follow_the_size_rules(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    blocks = parse_slurm(await get(client, "slurm-block"))
    sizes = [int(s) for s in blocks.pop("BlockSizes")["BlockSizes"]]
    nvl = [h.hostname for h in demo.hosts if h.hostname.startswith("gb200")]
    assert [sorted(v["Nodes"]) for v in blocks.values()] == [sorted(nvl)]  # the NVL72 rack is one block
    assert sizes[0] == 18
    for a, b in itertools.pairwise(sizes):
        ratio = b // a
        assert b % a == 0 and ratio & (ratio - 1) == 0  # a power-of-two multiple of the previous


async def test_gres_links_and_cores(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    lines = [line for line in (await get(client, "slurm-gres")).splitlines() if line.startswith("NodeName=")]
    by_host: dict[str, list[dict[str, str]]] = {}
    for line in lines:
        fields = dict(part.split("=", 1) for part in line.split())
        by_host.setdefault(fields["NodeName"], []).append(fields)
    h100 = by_host["h100-su1-n01"]
    matrix = [[int(x) for x in f["Links"].split(",")] for f in h100]
    assert all(matrix[i][i] == -1 for i in range(8))
    assert {matrix[i][j] for i in range(8) for j in range(8) if i != j} == {18}
    # core numbers, not the NUMA node's thread list (0-55,112-167): slurmd rejects thread ids
    assert h100[0]["Cores"] == "0-55" and h100[7]["Cores"] == "56-111"
    assert h100[0]["File"] == "/dev/nvidia0" and h100[0]["Type"] == "h100-80gb-hbm3"
    a100 = [[int(x) for x in f["Links"].split(",")] for f in by_host["a100-001"]]
    assert a100[0][1] == a100[1][0] == 12 and a100[0][2] == 0
    l40s = [[int(x) for x in f["Links"].split(",")] for f in by_host["l40s-001"]]
    assert {v for row in l40s for v in row} == {-1, 0}


async def test_kueue_topology_and_labels(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    topo = json.loads(await get(client, "kueue"))["items"][0]
    jsonschema.validate(topo, crd_schema("kueue-topology-crd.yaml"))
    levels = [lv["nodeLabel"] for lv in topo["spec"]["levels"]]
    assert levels[-1] == "kubernetes.io/hostname" and len(levels) == 3
    commands = [c for c in (await get(client, "kueue-labels")).splitlines() if not c.startswith("#")]
    labels = {}
    for cmd in commands:
        parts = cmd.split()
        labels[parts[3]] = dict(p.split("=", 1) for p in parts[4:-1])
    assert set(labels) == {h.hostname for h in demo.hosts}
    for host_labels in labels.values():
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in host_labels.values())
    su1 = {labels[h.hostname]["graphsvc.io/block"] for h in demo.hosts if h.scalable_unit == "h100-su1"}
    assert len(su1) == 1  # one block level value for one scalable unit
    racks = {h.hostname: h.rack for h in demo.hosts}
    for host, host_labels in labels.items():
        assert host_labels["graphsvc.io/rack"] == racks[host]
    nvl = {labels[h.hostname]["graphsvc.io/nvlink-clique"] for h in demo.hosts if h.hostname.startswith("gb200")}
    assert len(nvl) == 1


async def test_volcano_hypernodes(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    items = json.loads(await get(client, "volcano"))["items"]
    schema = crd_schema("volcano-hypernode-crd.yaml")
    names = {i["metadata"]["name"]: i for i in items}
    node_homes: dict[str, int] = {}
    for item in items:
        jsonschema.validate(item, schema)
        for m in item["spec"]["members"]:
            target = m["selector"]["exactMatch"]["name"]
            if m["type"] == "Node":
                node_homes[target] = node_homes.get(target, 0) + 1
            else:
                assert names[target]["spec"]["tier"] < item["spec"]["tier"]
    assert node_homes == {h.hostname: 1 for h in demo.hosts}
    tier1 = [i for i in items if i["spec"]["tier"] == 1]
    assert len(tier1) == 1 and len(tier1[0]["spec"]["members"]) == 18  # the NVL72 rack


def comparable(f: HostFacts) -> dict[str, Any]:
    return {
        "gpus": [(g.uuid, g.index, g.model, g.memory_mib, g.pci_bus_id, g.numa_node, g.compute_capability,
                  tuple(g.pcie_path), tuple(sorted((n.peer_type.value, n.links) for n in g.nvlinks)))
                 for g in f.gpus],
        "nics": sorted((n.name, n.pci_bus_id, n.rate_gbps, n.guid, n.rail, tuple(n.pcie_path)) for n in f.nics),
        "switches": sorted((s.bus_id, s.parent) for s in f.pcie_switches),
        "nvswitches": sorted(s.id for s in f.nvswitches),
        "affinity": sorted((a.gpu_uuid, a.nic, a.via) for a in f.gpu_nic_affinity),
    }  # fmt: skip


@pytest.mark.parametrize("host", ["h100-su1-n01", "gb200-rack01-t01", "a100-001", "l40s-001"])
async def test_nccl_xml_round_trip(client: httpx.AsyncClient, demo: SyntheticCluster, host: str) -> None:
    original = next(h for h in demo.hosts if h.hostname == host)
    text = await get(client, "nccl", host=host)
    back = parse_nccl_xml(text, ImportOptions(host=host))
    assert comparable(back) == comparable(original)


async def test_export_errors_are_4xx(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    assert (await client.get("/v1/export/nccl")).status_code == 422
    assert (await client.get("/v1/export/nccl", params={"host": "nope"})).status_code == 404
    assert (await client.get("/v1/export/slurm-tree", params={"cluster": "nope"})).status_code == 404
    assert (await client.get("/v1/export/bogus")).status_code == 422
    assert (await client.get("/v1/export/kueue", params={"cluster": "a'b"})).status_code == 422
    # A host of the cluster named, as nfd's export asks (nccl ignored the cluster: a probe's case).
    assert (await client.get("/v1/export/nccl", params={"host": "a100-001", "cluster": "default"})).status_code == 200
    other = await client.get("/v1/export/nccl", params={"host": "a100-001", "cluster": "elsewhere"})
    assert other.status_code == 404 and "in cluster 'elsewhere'" in other.text
    # A per-cluster export takes no host (it ignored one, even a host that does not exist).
    per_cluster = await client.get("/v1/export/slurm-gres", params={"host": "nope"})
    assert per_cluster.status_code == 422 and "per cluster" in per_cluster.text
