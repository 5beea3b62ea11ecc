"""Kubernetes exports of hosts whose names differ only by case, or lower-case into no valid node
name: they were one NodeFeature, one ResourceSlice and one `kubectl label node` target (the second
overwrote the first), and nodeName fields held names no kubelet registers (`odd..x`, `odd-host-`).
Now each such host is left out, and the export says so (a comment, the List's annotation)."""

from __future__ import annotations

import collections
import json
from typing import Any

import httpx
import pytest

from graphsvc.exports.model import is_dns1123_subdomain
from graphsvc.exports.render import SKIPPED_HOSTS
from tests.helpers import as_json, h100

HOSTS = ["Case-Node1", "case-node1", "odd..x", "odd_host.", "odd-host-", "good-1", "Good-2"]
LEFT_OUT = {"Case-Node1", "case-node1", "odd..x", "odd_host.", "odd-host-"}


@pytest.fixture
async def odd_names(client: httpx.AsyncClient) -> None:
    for seed, name in enumerate(HOSTS):
        resp = await client.put(f"/v1/hosts/{name}/facts", json=as_json(h100(name, seed=seed, cluster="casec")))
        assert resp.status_code == 200, resp.text


async def export(client: httpx.AsyncClient, fmt: str) -> str:
    resp = await client.get(f"/v1/export/{fmt}", params={"cluster": "casec"})
    assert resp.status_code == 200, resp.text
    return resp.text


def said(text: str) -> None:
    for host in LEFT_OUT:
        assert repr(host) in text, host


@pytest.mark.parametrize("fmt", ["nfd", "dra", "volcano"])
async def test_kubernetes_objects_have_distinct_valid_names(
    client: httpx.AsyncClient, odd_names: None, fmt: str
) -> None:
    doc: dict[str, Any] = json.loads(await export(client, fmt))
    names = collections.Counter(i["metadata"]["name"] for i in doc["items"])
    assert [n for n, k in names.items() if k > 1] == []
    assert all(is_dns1123_subdomain(n) for n in names), names
    said(doc["metadata"]["annotations"][SKIPPED_HOSTS])
    nodes: list[str] = []
    for item in doc["items"]:
        if fmt == "dra":
            nodes += [item["spec"]["nodeName"], item["spec"]["pool"]["name"]]
        elif fmt == "nfd":
            nodes.append(item["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"])
        else:
            nodes += [m["selector"]["exactMatch"]["name"] for m in item["spec"]["members"] if m["type"] == "Node"]
    assert nodes and all(is_dns1123_subdomain(n) for n in nodes), nodes
    assert set(nodes) <= {"good-1", "good-2"}


@pytest.mark.parametrize("fmt", ["kueue-labels", "topograph-labels"])
async def test_kubectl_label_targets_are_distinct_nodes(client: httpx.AsyncClient, odd_names: None, fmt: str) -> None:
    text = await export(client, fmt)
    targets = [line.split()[3] for line in text.splitlines() if line.startswith("kubectl label node ")]
    assert sorted(targets) == ["good-1", "good-2"]
    said("\n".join(line for line in text.splitlines() if line.startswith("#")))
