"""Sites in the graph, and placement never spanning sites unless the request allows it (both stores)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import httpx
import pytest
from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import PlacementRequest, parse_request
from graphsvc.sites.catalog import SiteCatalog
from graphsvc.sites.store import list_sites, put_sites, site_links
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.hosts import HostSpec, dgx_h100


def _host(name: str, cluster: str, seed: int) -> HostFacts:
    return dgx_h100(HostSpec(name, cluster, f"{cluster}-rack", None, seed))


TWO_SITES: dict[str, Any] = {
    "sites": [
        {"name": "site-a", "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": ["ca"]},
        {"name": "site-b", "kind": "cloud-region", "provider": "aws", "region": "us-east-1",
         "capacity_kinds": ["on-demand"], "clusters": ["cb"]},
    ],
    "links": [{"a": "site-b", "b": "site-a", "bandwidth_gbps": 12.5, "latency_ms": 80.0}],
}  # fmt: skip


async def _two_sites(gw: Gateway, *, catalog: bool = True) -> None:
    """Two hosts (16 H100) in each of two clusters, without a fabric: only the sites keep them apart."""
    for i, (name, cluster) in enumerate([("a1", "ca"), ("a2", "ca"), ("b1", "cb"), ("b2", "cb")]):
        await ingest_host(gw, _host(name, cluster, 10 + i))
    if catalog:
        await put_sites(gw, SiteCatalog.model_validate(TWO_SITES), time.time())


def _sites_of(result_hosts: list[str]) -> set[str]:
    return {"site-a" if h.startswith("a") else "site-b" for h in result_hosts}


async def test_sites_are_stored_with_clusters_and_links(gateway: Gateway) -> None:
    await _two_sites(gateway)
    sites = await list_sites(gateway)
    assert [(s.name, s.kind.value, s.clusters) for s in sites] == [
        ("site-a", "on-prem", ("ca",)),
        ("site-b", "cloud-region", ("cb",)),
    ]
    assert sites[1].capacity_kinds[0].value == "on-demand"
    links = await site_links(gateway)
    assert [(x.a, x.b, x.bandwidth_gbps, x.latency_ms) for x in links] == [("site-a", "site-b", 12.5, 80.0)]
    # Replacing the catalogue replaces it whole.
    await put_sites(gateway, SiteCatalog.model_validate({"sites": [TWO_SITES["sites"][0]]}), time.time())
    assert [s.name for s in await list_sites(gateway)] == ["site-a"]
    assert await site_links(gateway) == []


async def test_a_placement_never_spans_sites(gateway: Gateway) -> None:
    await _two_sites(gateway, catalog=False)
    engine = PlacementEngine(gateway)
    # Without sites the two clusters are not pooled either: two fabrics, no path between them
    # (until stop 60 they were, and 24 GPUs were offered across them).
    assert (await engine.place(PlacementRequest(gpus=24))).candidates == []
    one = await engine.place(PlacementRequest(gpus=16, limit=5))
    assert one.candidates and all(len(_sites_of([h.name for h in c.hosts])) == 1 for c in one.candidates)
    await put_sites(gateway, SiteCatalog.model_validate(TWO_SITES), time.time())
    engine = PlacementEngine(gateway)
    # Each site has 16 GPUs: 24 no longer fit, and 16 are taken from one site only.
    assert (await engine.place(PlacementRequest(gpus=24))).candidates == []
    sixteen = await engine.place(PlacementRequest(gpus=16, limit=5))
    assert sixteen.candidates
    for cand in sixteen.candidates:
        assert len(_sites_of([h.name for h in cand.hosts])) == 1
        assert cand.inter_site is None
    for text in ("12", "12 per-host=6", "16 per-host=8", "10 packing=spread"):
        for cand in (await engine.place(parse_request(text + " limit=5"))).candidates:
            assert len(_sites_of([h.name for h in cand.hosts])) == 1, text


async def test_a_host_that_moved_cluster_is_not_paired_under_its_old_leaf(gateway: Gateway) -> None:
    """b moved to cluster cb with its cables still on ca's leaf (they go at ca's next fabric
    import, docs/ingest.md): the one-leaf search paired a and b across the two clusters (a probe's case)."""
    a, b = _host("a", "ca", 1), _host("b", "ca", 2)
    for host in (a, b):
        await ingest_host(gateway, host)
    cables = [NICUplink(host=h.hostname, nic=n.name, switch="leaf", bandwidth_gbps=50) for h in (a, b) for n in h.nics]
    leaf = FabricSwitch(name="leaf", tier=SwitchTier.LEAF)
    await ingest_fabric(gateway, FabricFacts(cluster="ca", source="test", switches=[leaf], nic_uplinks=cables))
    assert (await PlacementEngine(gateway).place(PlacementRequest(gpus=16))).candidates  # one cluster: one hop
    moved = b.model_copy(update={"cluster": "cb", "collected_at": b.collected_at + timedelta(seconds=1)})
    assert (await ingest_host(gateway, moved)).applied
    for text in ("16", "16 per-host=8", "12 ib-hops<=1"):
        assert (await PlacementEngine(gateway).place(parse_request(text))).candidates == [], text


async def test_spanning_sites_when_allowed_shows_the_inter_site_bottleneck(gateway: Gateway) -> None:
    await _two_sites(gateway)
    result = await PlacementEngine(gateway).place(parse_request("24 cross-site"))
    assert result.candidates
    cand = result.candidates[0]
    assert _sites_of([h.name for h in cand.hosts]) == {"site-a", "site-b"}
    assert cand.inter_site is not None
    # 16 GPUs in one site and 8 in the other: the 12.5 GB/s link shared by the 8 of the smaller side.
    assert cand.inter_site.link == "site-a<->site-b"
    assert cand.inter_site.per_gpu_gbps == pytest.approx(12.5 / 8)
    assert cand.bottleneck_gbps == pytest.approx(12.5 / 8, abs=1e-3)
    assert "spans sites" in cand.reason and "12.5 GB/s" in cand.reason


async def test_the_request_can_name_its_sites(gateway: Gateway) -> None:
    await _two_sites(gateway)
    engine = PlacementEngine(gateway)
    for site, prefix in (("site-a", "a"), ("site-b", "b")):
        result = await engine.place(parse_request(f"8 site={site} limit=5"))
        assert result.candidates
        assert all(h.name.startswith(prefix) for c in result.candidates for h in c.hosts)
    assert (await engine.place(parse_request("8 site=nowhere"))).candidates == []


async def test_site_placement_over_graphql(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await _two_sites(gateway)
    query = """query($span: Boolean!) { sitePlacement(request: {gpus: 24}, allowCrossSite: $span) {
      __typename ... on SitePlacement { candidates { sites interSite { link perGpuGbps latencyMs }
      candidate { bottleneckGbps reason } } infeasible } } }"""
    body = (await client.post("/graphql", json={"query": query, "variables": {"span": False}})).json()
    assert body["data"]["sitePlacement"]["candidates"] == []
    body = (await client.post("/graphql", json={"query": query, "variables": {"span": True}})).json()
    cand = body["data"]["sitePlacement"]["candidates"][0]
    assert cand["sites"] == ["site-a", "site-b"]
    assert cand["interSite"] == {"link": "site-a<->site-b", "perGpuGbps": 12.5 / 8, "latencyMs": 80.0}
    sites = (
        await client.post("/graphql", json={"query": "{ sites { name kind clusters gpus { gpus free } } }"})
    ).json()
    assert [s["name"] for s in sites["data"]["sites"]] == ["site-a", "site-b"]
    assert sites["data"]["sites"][0]["gpus"] == [{"gpus": 16, "free": 16}]


async def test_sites_rest_refuses_an_inconsistent_catalogue(client: httpx.AsyncClient) -> None:
    bad = {"sites": [{"name": "x", "kind": "on-prem", "clusters": ["c"]},
                     {"name": "y", "kind": "on-prem", "clusters": ["c"]}]}  # fmt: skip
    resp = await client.put("/v1/sites", json=bad)
    assert resp.status_code == 422
    assert "belongs to both" in resp.text
    resp = await client.put("/v1/sites", json={"sites": [{"name": "x", "kind": "moon"}]})
    assert resp.status_code == 422
    resp = await client.put("/v1/sites", json=TWO_SITES)
    assert resp.status_code == 200 and resp.json() == {"sites": 2}
    listed = (await client.get("/v1/sites")).json()
    assert [s["name"] for s in listed] == ["site-a", "site-b"]


async def test_a_cluster_name_is_named_as_hosts_name_theirs(client: httpx.AsyncClient) -> None:
    """An empty cluster name is refused (422) before the store: `MERGE (:Cluster {name: ''})`
    kills FalkorDB 4.16 (the REST fuzz test found it through PUT /v1/sites); so is one a host
    could not report (control characters, spaces)."""
    for name in ["", "a b", "c\u0005", "-lead"]:
        resp = await client.put("/v1/sites", json={"sites": [{"name": "x", "kind": "on-prem", "clusters": [name]}]})
        assert resp.status_code == 422, name
    resp = await client.put("/v1/sites", json=TWO_SITES)
    assert resp.status_code == 200  # the store is still there


async def test_the_sites_export(gateway: Gateway, client: httpx.AsyncClient) -> None:
    await _two_sites(gateway)
    resp = await client.get("/v1/export/sites")
    assert resp.status_code == 200 and resp.headers["x-graphsvc-graph-version"]
    doc = resp.json()
    assert [(s["name"], s["clusters"], s["gpus"][0]["gpus"]) for s in doc["sites"]] == [
        ("site-a", ["ca"], 16),
        ("site-b", ["cb"], 16),
    ]
    assert doc["links"] == [{"a": "site-a", "b": "site-b", "bandwidthGBps": 12.5, "latencyMs": 80.0}]
