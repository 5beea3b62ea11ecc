"""Capability constraints against a real mixed cluster (H100, GB200, A100, L40S) on both stores."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

PLACE = """query($r: PlacementRequestInput!) { placement(request: $r) {
  candidates { gpus { model } } infeasible { constraint message } } }"""
TEXT = """query($t: String!) { placementText(text: $t) {
  candidates { gpus { model } } infeasible { constraint message } } }"""


@pytest.fixture
async def mixed(gateway: Gateway) -> Gateway:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    return gateway


async def text(client: httpx.AsyncClient, t: str) -> dict[str, Any]:
    body = (await client.post("/graphql", json={"query": TEXT, "variables": {"t": t}})).json()
    assert "errors" not in body, body
    out: dict[str, Any] = body["data"]["placementText"]
    return out


def models(result: dict[str, Any]) -> set[str]:
    return {g["model"] for c in result["candidates"] for g in c["gpus"]}


@pytest.mark.parametrize(
    ("request_text", "allowed"),
    [
        ("4 fp4", {"NVIDIA GB200"}),
        ("4 mem-bw>=5000", {"NVIDIA GB200"}),
        ("4 link-gen>=5 nvlink=full-mesh", {"NVIDIA GB200"}),
        ("2 cc>=8.9 limit=10", {"NVIDIA GB200", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"}),
    ],
)
async def test_only_capable_gpus_are_offered(
    client: httpx.AsyncClient, mixed: Gateway, request_text: str, allowed: set[str]
) -> None:
    result = await text(client, request_text)
    assert result["candidates"], result["infeasible"]
    assert models(result) <= allowed


async def test_no_capable_model_is_named_with_what_each_lacks(client: httpx.AsyncClient, mixed: Gateway) -> None:
    result = await text(client, "2xA100 fp8")
    assert result["candidates"] == []
    reason = result["infeasible"][0]
    assert reason["constraint"] == "capabilities" and "no FP8" in reason["message"]


async def test_structured_input(client: httpx.AsyncClient, mixed: Gateway) -> None:
    request = {"gpus": 4, "capabilities": {"minComputeCapability": {"major": 10}, "fp4": True}}
    body = (await client.post("/graphql", json={"query": PLACE, "variables": {"r": request}})).json()
    assert models(body["data"]["placement"]) == {"NVIDIA GB200"}
    bad = {"gpus": 4, "capabilities": {"minLinkGeneration": 0}}
    body = (await client.post("/graphql", json={"query": PLACE, "variables": {"r": bad}})).json()
    assert body["data"]["placement"]["infeasible"][0]["constraint"] == "minLinkGeneration"


async def test_a_mig_enabled_gpu_is_never_offered_whole(client: httpx.AsyncClient, gateway: Gateway) -> None:
    from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100

    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=4)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = c.hosts[:1]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host == c.hosts[0].hostname]
    host = c.hosts[0]
    mig = host.gpus[0].model_copy(update={"mig_mode": True})
    c.hosts[0] = host.model_copy(update={"gpus": [mig, *host.gpus[1:]]})
    await load(gateway, c)
    query = """query($t: String!) { placementText(text: $t) { candidates { gpus { uuid } } } }"""
    for ask in ("1 limit=20", "4 limit=20", "7 limit=20"):
        body = (await client.post("/graphql", json={"query": query, "variables": {"t": ask}})).json()
        offered = {g["uuid"] for cand in body["data"]["placementText"]["candidates"] for g in cand["gpus"]}
        assert mig.uuid not in offered
    body = (await client.post("/graphql", json={"query": query, "variables": {"t": "8"}})).json()
    assert body["data"]["placementText"]["candidates"] == []  # all 8 would include the MIG GPU
