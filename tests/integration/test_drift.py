"""Drift checks on a real store: fresh exports show none; a recabled host is exactly the drift.

Runs on every store the `gateway`/`client` fixtures give (FalkorDB, and Neo4j where the
fixtures are parametrised with it). The CLI is exercised against a real HTTP server on the
same store, with its exit codes (0 no drift, 1 drift, 2 could not check).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from topo_facts import NICUplink

from graphsvc.cli import main
from graphsvc.ingest.service import ingest_fabric
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load
from tests.faults.live import serving

DRIFT = """
query($format: DriftFormat!, $deployed: String!, $cluster: String! = "default") {
  drift(format: $format, deployed: $deployed, cluster: $cluster) {
    __typename
    ... on DriftReport { drifted graphVersion entries { kind change name expected deployed message } }
    ... on DriftInputInvalid { message }
    ... on DriftClusterNotFound { message cluster }
  }
}
"""


@pytest.fixture
async def demo(gateway: Gateway) -> SyntheticCluster:
    return await load(gateway, "demo:sus=1,nvl72_racks=2,a100_hosts=2,l40s_hosts=2")


async def export(client: httpx.AsyncClient, fmt: str) -> str:
    resp = await client.get(f"/v1/export/{fmt}")
    assert resp.status_code == 200, resp.text
    return resp.text


async def drift(client: httpx.AsyncClient, fmt: str, deployed: str, **extra: str) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": DRIFT, "variables": {"format": fmt, "deployed": deployed,
                                                                              **extra}})  # fmt: skip
    body = resp.json()
    assert resp.status_code == 200 and not body.get("errors"), body
    out: dict[str, Any] = body["data"]["drift"]
    return out


def entries(report: dict[str, Any]) -> list[tuple[str, str, str, str | None, str | None]]:
    assert report["__typename"] == "DriftReport", report
    return [(e["kind"], e["change"], e["name"], e["expected"], e["deployed"]) for e in report["entries"]]


async def node_list(client: httpx.AsyncClient) -> str:
    """What `kubectl get nodes -o yaml` would show after both label exports were applied."""
    nodes: dict[str, dict[str, str]] = {}
    for fmt in ("kueue-labels", "topograph-labels"):
        for line in (await export(client, fmt)).splitlines():
            parts = line.split()
            if parts[:3] == ["kubectl", "label", "node"]:
                labels = nodes.setdefault(parts[3], {"kubernetes.io/hostname": parts[3], "kubernetes.io/os": "linux"})
                for pair in parts[4:]:
                    key, eq, value = pair.partition("=")
                    if eq and not pair.startswith("--"):
                        labels[key] = value
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": lb}, "status": {"capacity": {}}}
             for n, lb in nodes.items()]  # fmt: skip
    items.append({"kind": "Node", "metadata": {"name": "cpu-only-1", "labels": {"kubernetes.io/os": "linux"}}})
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


async def recable(gw: Gateway, cluster: SyntheticCluster, host: str, leaf: str, nics: int | None = None) -> None:
    """Re-ingest the fabric with `host`'s NIC cables (the first `nics`, default all) on `leaf`."""
    moved = 0
    uplinks: list[NICUplink] = []
    for u in cluster.nic_uplinks:
        if u.host == host and (nics is None or moved < nics):
            moved += 1
            u = u.model_copy(update={"switch": leaf})
        uplinks.append(u)
    await ingest_fabric(gw, cluster.fabric().model_copy(update={"nic_uplinks": uplinks}))


@pytest.mark.parametrize(
    ("fmt", "kind"),
    [("slurm-tree", "SLURM"), ("slurm-block", "SLURM"), ("slurm-yaml", "SLURM"), ("volcano", "VOLCANO"),
     ("kueue", "KUEUE"), ("topograph-labels", "LABELS"), ("kueue-labels", "LABELS")],
)  # fmt: skip
async def test_a_fresh_export_shows_no_drift(
    client: httpx.AsyncClient, demo: SyntheticCluster, fmt: str, kind: str
) -> None:
    report = await drift(client, kind, await export(client, fmt))
    assert entries(report) == [] and report["drifted"] is False
    nodes = await node_list(client)
    assert entries(await drift(client, "LABELS", nodes)) == []
    kueue_with_nodes = json.loads(nodes)
    kueue_with_nodes["items"] += json.loads(await export(client, "kueue"))["items"]
    assert entries(await drift(client, "KUEUE", json.dumps(kueue_with_nodes))) == []


async def test_a_recabled_host_is_exactly_the_drift(
    gateway: Gateway, client: httpx.AsyncClient, demo: SyntheticCluster
) -> None:
    deployed = {fmt: await export(client, fmt) for fmt in ("slurm-tree", "slurm-block", "slurm-yaml", "volcano")}
    nodes = await node_list(client)
    await recable(gateway, demo, "a100-001", "l40s-leaf0")  # every cable of one host moved to another leaf
    moved = [("node", "moved", "a100-001", "leafgroup-l40s-leaf0", "leafgroup-a100-leaf0")]
    assert entries(await drift(client, "SLURM", deployed["slurm-tree"])) == moved
    assert entries(await drift(client, "SLURM", deployed["slurm-yaml"])) == moved
    assert entries(await drift(client, "SLURM", deployed["slurm-block"])) == []  # not in an NVLink block
    assert entries(await drift(client, "VOLCANO", deployed["volcano"])) == moved
    labels = entries(await drift(client, "LABELS", nodes))
    assert labels == [
        ("label", "moved", "a100-001 graphsvc.io/block", "leafgroup-l40s-leaf0", "leafgroup-a100-leaf0"),
        ("label", "moved", "a100-001 network.topology.nvidia.com/leaf", "leafgroup-l40s-leaf0",
         "leafgroup-a100-leaf0"),
    ]  # fmt: skip


async def test_one_moved_cable_makes_a_new_switch_level(
    gateway: Gateway, client: httpx.AsyncClient, demo: SyntheticCluster
) -> None:
    tree = await export(client, "slurm-tree")
    await recable(gateway, demo, "a100-002", "l40s-leaf0", nics=1)  # one NIC cable to another leaf
    found = entries(await drift(client, "SLURM", tree))
    assert [(k, c, n) for k, c, n, _, _ in found] == [("node", "moved", "a100-002"), ("switch", "missing",
                                                      found[1][2])]  # fmt: skip
    assert found[0][3] == found[1][2] and found[0][4] == "leafgroup-a100-leaf0"
    assert found[1][2].startswith("leafgroup-a100-leaf0-")  # hosts on {a100-leaf0, l40s-leaf0}


async def test_a_missing_switch_and_a_wrong_block_size(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    tree = (await export(client, "slurm-tree")).splitlines()
    pod = next(line for line in tree if "Switches=" in line)
    without_pod = "\n".join(line for line in tree if line != pod)
    pod_name = pod.split()[0].split("=", 1)[1]
    assert entries(await drift(client, "SLURM", without_pod)) == [("switch", "missing", pod_name, "top level", None)]
    block = await export(client, "slurm-block")
    assert "BlockSizes=18,36\n" in block  # two NVL72 racks of 18 trays
    wrong = block.replace("BlockSizes=18,36", "BlockSizes=16,32")
    assert entries(await drift(client, "SLURM", wrong)) == [("block-size", "changed", "BlockSizes", "18,36", "16,32")]
    yaml_copy = (await export(client, "slurm-yaml")).replace("      - 18\n", "      - 16\n")
    assert entries(await drift(client, "SLURM", yaml_copy)) == [
        ("block-size", "changed", "BlockSizes", "18,36", "16,36")
    ]


async def test_expected_failures_are_typed(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    bad = await drift(client, "SLURM", "SwitchName=x Nodes=a[1-")
    assert bad["__typename"] == "DriftInputInvalid" and "hostlist" in bad["message"]
    assert (await drift(client, "VOLCANO", "{not: [yaml"))["__typename"] == "DriftInputInvalid"
    nobody = await drift(client, "SLURM", "SwitchName=x Nodes=a", cluster="nope")
    assert nobody == {"__typename": "DriftClusterNotFound", "message": "cluster 'nope' has no hosts",
                      "cluster": "nope"}  # fmt: skip


async def test_cli_exit_codes(app: FastAPI, client: httpx.AsyncClient, demo: SyntheticCluster, tmp_path: Path) -> None:
    async with serving(app) as hostport:
        url = f"http://{hostport}"
        fresh, stale, garbage = tmp_path / "fresh.conf", tmp_path / "stale.conf", tmp_path / "garbage.conf"
        tree = await export(client, "slurm-tree")
        fresh.write_text(tree)
        assert "SwitchName=leafgroup-a100-leaf0 Nodes=a100-[001-002]\n" in tree
        stale.write_text(
            tree.replace("Nodes=a100-[001-002]", "Nodes=a100-002").replace("Nodes=l40s", "Nodes=a100-001,l40s")
        )
        garbage.write_text("this is not a topology\n")
        nodes = tmp_path / "nodes.json"
        nodes.write_text(await node_list(client))
        codes = [
            await asyncio.to_thread(main, ["drift", kind, str(path), "--server", url])
            for kind, path in [("slurm", fresh), ("slurm", stale), ("slurm", garbage), ("labels", nodes)]
        ]
        assert codes == [0, 1, 2, 0]


async def test_kueue_levels_and_labels(client: httpx.AsyncClient, demo: SyntheticCluster) -> None:
    topologies = json.loads(await export(client, "kueue"))
    mine = topologies["items"][0]
    mine["spec"]["levels"] = mine["spec"]["levels"][1:]  # someone dropped the block level
    report = entries(await drift(client, "KUEUE", json.dumps(topologies)))
    assert [(k, c, n) for k, c, n, _, _ in report] == [("level", "changed", mine["metadata"]["name"])]
    # a node list where one host lost its leaf label and one carries a stale rack
    nodes = json.loads(await node_list(client))
    for item in nodes["items"]:
        labels = item["metadata"]["labels"]
        if item["metadata"]["name"] == "l40s-001":
            del labels["network.topology.nvidia.com/leaf"]
        if item["metadata"]["name"] == "a100-002":
            labels["graphsvc.io/rack"] = "old-rack"
    found = entries(await drift(client, "LABELS", json.dumps(nodes)))
    assert found == [
        ("label", "moved", "a100-002 graphsvc.io/rack", "a100-r01", "old-rack"),
        ("label", "changed", "l40s-001 network.topology.nvidia.com/leaf", "leafgroup-l40s-leaf0", "(unset)"),
    ]
