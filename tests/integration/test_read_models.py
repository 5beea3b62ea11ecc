"""The host topology read model on both stores: what each view costs in queries, and that the
GraphQL host, the REST view and the exports agree because they read the same values."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.read.hosts import HostReader, nvlink_lanes
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load

HOST_QUERIES = ("host_detail", "host_layout", "host_nvlink_edges", "host_gpu_nics")


@pytest.fixture
async def demo(gateway: Gateway) -> SyntheticCluster:
    return await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")


def calls(gw: Gateway) -> dict[str, int]:
    return {name: gw.stats[name].calls for name in HOST_QUERIES if name in gw.stats}


async def gql(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    body: dict[str, Any] = (await client.post("/graphql", json={"query": query})).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def test_host_name_costs_one_query(client: httpx.AsyncClient, gateway: Gateway, demo: SyntheticCluster) -> None:
    name = demo.hosts[0].hostname
    gateway.stats.clear()
    data = await gql(client, f'{{ host(name: "{name}") {{ name gpus {{ index }} }} }}')
    assert data["host"]["name"] == name
    assert calls(gateway) == {"host_detail": 1}


async def test_host_parts_are_batched_across_aliases(
    client: httpx.AsyncClient, gateway: Gateway, demo: SyntheticCluster
) -> None:
    names = [h.hostname for h in demo.hosts[:3]]
    fields = " ".join(
        f'h{i}: host(name: "{n}") {{ nics {{ name servesGpus }} numaNodes {{ index }} nvlinkMatrix {{ rows }} }}'
        for i, n in enumerate(names)
    )
    gateway.stats.clear()
    data = await gql(client, f"{{ {fields} }}")
    assert all(data[f"h{i}"]["nics"] for i in range(3))
    # Each part once for all three hosts (strawberry dataloaders).
    assert calls(gateway) == dict.fromkeys(HOST_QUERIES, 1)


async def test_cluster_export_reads_hosts_in_four_queries(
    client: httpx.AsyncClient, gateway: Gateway, demo: SyntheticCluster
) -> None:
    gateway.stats.clear()
    resp = await client.get("/v1/export/slurm-gres")
    assert resp.status_code == 200
    assert sum(1 for line in resp.text.splitlines() if line.startswith("NodeName=")) == sum(
        len(h.gpus) for h in demo.hosts
    )
    assert calls(gateway) == dict.fromkeys(HOST_QUERIES, 1)


async def test_graphql_rest_and_gres_agree_on_a_host(
    client: httpx.AsyncClient, gateway: Gateway, demo: SyntheticCluster
) -> None:
    name = demo.hosts[0].hostname
    topo = await HostReader(gateway).host(name)
    assert topo is not None
    rest = (await client.get(f"/v1/hosts/{name}")).json()
    data = await gql(client, f'{{ host(name: "{name}") {{ gpus {{ uuid }} nvlinkMatrix {{ rows }} }} }}')
    assert [g["uuid"] for g in rest["gpus"]] == [g.uuid for g in topo.gpus] == [g["uuid"] for g in data["host"]["gpus"]]
    lanes = nvlink_lanes(topo.gpus, topo.nvlinks)
    matrix = data["host"]["nvlinkMatrix"]["rows"]
    for a in topo.gpus:
        for b in topo.gpus:
            if (a.index, b.index) in lanes:
                assert matrix[a.index][b.index] == f"NV{lanes[(a.index, b.index)]}"
    gres = (await client.get("/v1/export/slurm-gres")).text
    first = next(line for line in gres.splitlines() if line.startswith(f"NodeName={name} "))
    links = first.split("Links=")[1].split()[0].split(",")
    assert links[0] == "-1"
    assert [int(x) for x in links[1:]] == [lanes.get((0, b.index), 0) for b in topo.gpus[1:]]


async def test_unknown_hosts_are_absent(gateway: Gateway, demo: SyntheticCluster) -> None:
    found = await HostReader(gateway).hosts(["no-such-host", demo.hosts[0].hostname])
    assert list(found) == [demo.hosts[0].hostname]
    assert await HostReader(gateway).hosts([]) == {}
