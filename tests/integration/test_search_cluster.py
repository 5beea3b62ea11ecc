"""Every search hit names its cluster, read in the same statement as the hit (a GPU's: its
host's): the explorer opened a switch's fabric only after looking its cluster up, one to several
requests per switch hit, and showed no cluster beside a host or GPU. Both stores."""

from __future__ import annotations

import httpx
import pytest

from graphsvc.read.explorer import SearchHit, rank
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_graphql import gql

SEARCH = "query($t: String!) { search(text: $t, first: 20) { kind name host cluster } }"


@pytest.fixture
async def demo(gateway: Gateway) -> Gateway:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    return gateway


async def host_cluster(client: httpx.AsyncClient, host: str) -> str:
    cluster: str = (await gql(client, "query($n: String!) { host(name: $n) { cluster } }", {"n": host}))["data"][
        "host"
    ]["cluster"]
    return cluster


async def test_host_gpu_and_switch_hits_name_their_cluster(client: httpx.AsyncClient, demo: Gateway) -> None:
    hosts = (await gql(client, SEARCH, {"t": "su1-n17"}))["data"]["search"]
    assert hosts[0]["name"] == "h100-su1-n17"
    for hit in hosts:
        assert hit["cluster"] == await host_cluster(client, hit["host"]), hit

    gpu = (await gql(client, '{ host(name: "l40s-001") { gpus { uuid } } }'))["data"]["host"]["gpus"][0]["uuid"]
    found = (await gql(client, SEARCH, {"t": gpu[-12:]}))["data"]["search"]
    assert found[0]["kind"] == "gpu" and found[0]["host"] == "l40s-001"
    assert found[0]["cluster"] == await host_cluster(client, "l40s-001") is not None

    switches = [h for h in (await gql(client, SEARCH, {"t": "leaf"}))["data"]["search"] if h["kind"] == "switch"]
    assert switches
    for hit in switches:
        assert hit["cluster"] is not None, hit
        page = "query($c: String!) { fabric(cluster: $c, first: 500) { switches { name } } }"
        names = {s["name"] for s in (await gql(client, page, {"c": hit["cluster"]}))["data"]["fabric"]["switches"]}
        assert hit["name"] in names, hit


def test_ranking_keeps_each_hits_cluster() -> None:
    hits = [
        SearchHit("host", "h100-su3-n18", "h100-su3-n18", "", 0.0, "east"),
        SearchHit("switch", "leaf-su3-n17", None, "leaf switch", 0.0, None),  # a graph that names none
    ]
    ranked = rank("su3-n17", hits, 5)
    assert [(h.name, h.cluster) for h in ranked] == [("leaf-su3-n17", None), ("h100-su3-n18", "east")]
