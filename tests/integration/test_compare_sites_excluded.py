"""compareSites says how many of a site's free GPUs a placement excludes, and why (both stores).

A site whose only host had 8 free H100s, one of them degraded, answered an 8xH100 request with
"no placement of 8 GPUs here, now or as leases run out (8 GPUs free)": placement refuses degraded
GPUs by default, which the reason hid. It now names the excluded GPUs, read in one statement for
a site that cannot place the job only (queries/site_free_excluded); the plain case keeps its words.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from topo_facts.models import Health

from graphsvc.api.app import create_app
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.settings import Settings
from graphsvc.sites.catalog import SiteCatalog, SiteIn
from graphsvc.sites.compare import Objective
from graphsvc.sites.estimate import JobProfile
from graphsvc.sites.model import CapacityKind, SiteKind
from graphsvc.sites.service import compare_sites, excluded_free
from graphsvc.sites.store import FreeGPUs, put_sites, site_free_gpus
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load, occupy
from tests.queries import with_test_queries

QUERY = """query($text: String!) {
  c: compareSites(text: $text, profile: {gpuHours: 1}) {
    __typename ... on ValidationError { field message }
    ... on SiteComparison { sites { site fits gpus reason } } } }"""


def _site(name: str, seed: int, degraded: tuple[int, ...] = ()) -> SyntheticCluster:
    """One DGX H100 host (8 GPUs, no impaired one but those degraded here) in a cluster of its own,
    its leaves and spines, all named after the site (tests.cluster_helpers.one_unit, one host)."""
    cluster = SyntheticCluster(f"{name}-c")
    leaves = add_superpod_h100(cluster, 1, seed=seed, prefix=name)
    add_spines(cluster, leaves, prefix=f"{name}-spine", sus=1)
    host = cluster.hosts[0]
    gpus = [
        g.model_copy(update={"health": Health.DEGRADED if i in degraded else Health.OK})
        for i, g in enumerate(host.gpus)
    ]
    cluster.hosts = [host.model_copy(update={"gpus": gpus})]
    cluster.nic_uplinks = [u for u in cluster.nic_uplinks if u.host == host.hostname]
    return cluster


async def _compare(gateway: Gateway, text: str) -> dict[str, dict[str, Any]]:
    app = create_app(Settings(insecure_dev=True), gateway=gateway)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
        resp = await c.post("/graphql", json={"query": QUERY, "variables": {"text": text}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body and body["data"]["c"]["__typename"] == "SiteComparison", body
    return {s["site"]: s for s in body["data"]["c"]["sites"]}


async def test_the_reason_names_the_free_gpus_placement_excludes(gateway: Gateway) -> None:
    worn, busy = _site("worn", seed=0, degraded=(3,)), _site("busy", seed=1)
    for cluster in (worn, busy):
        await load(gateway, cluster)
    await occupy(gateway, [busy.hosts[0].gpus[0].uuid])  # 7 free, none excluded: the plain case
    sites = [
        SiteIn(name=n, kind=SiteKind.ON_PREM, capacity_kinds=[CapacityKind.OWNED], clusters=[c.name])
        for n, c in (("worn", worn), ("busy", busy))
    ]
    await put_sites(gateway, SiteCatalog(sites=sites), time.time())

    before = gateway.stats["site_free_excluded"].calls if "site_free_excluded" in gateway.stats else 0
    answer = await _compare(gateway, "8xH100")
    assert not answer["worn"]["fits"] and not answer["busy"]["fits"]
    assert answer["worn"]["reason"] == (
        "no placement of 8 GPUs here, now or as leases run out "
        "(8 GPUs free, 1 of them excluded: 1 degraded, refused while excludeUnhealthy is true)"
    )
    assert answer["busy"]["reason"] == "no placement of 8 GPUs here, now or as leases run out (7 GPUs free)"
    assert gateway.stats["site_free_excluded"].calls - before == 2  # one read a site that cannot place it

    # Degraded GPUs admitted: the worn site places the job, and reads nothing more for it.
    answer = await _compare(gateway, "8xH100 allow-unhealthy")
    assert answer["worn"]["fits"] and answer["worn"]["gpus"] == 8
    assert gateway.stats["site_free_excluded"].calls - before == 3  # the busy site's alone
    assert answer["busy"]["reason"] == "no placement of 8 GPUs here, now or as leases run out (7 GPUs free)"

    # The read is paid for by a wait search the site did not need: with none paid for (the cost
    # limit cut them all), the reason keeps its plain words and nothing more is read.
    cut = await compare_sites(
        PlacementEngine(gateway), parse_request("8xH100"), JobProfile(gpu_hours=1), Objective.CHEAPEST, wait_searches=0
    )
    assert {o.site: o.reason for o in cut.options}["worn"] == (
        "no placement of 8 GPUs here, now or as leases run out (8 GPUs free)"
    )
    assert gateway.stats["site_free_excluded"].calls - before == 3


def test_each_excluded_gpu_is_counted_once_under_its_first_reason() -> None:
    kinds = [
        FreeGPUs("NVIDIA H100 80GB HBM3", False, False, 5),
        FreeGPUs("NVIDIA H100 80GB HBM3", False, True, 2),
        FreeGPUs("NVIDIA H100 80GB HBM3", True, True, 1),  # MIG and degraded: counted as MIG
        FreeGPUs("NVIDIA A100-SXM4-80GB", False, True, 4),  # another model, degraded too
    ]
    assert excluded_free(parse_request("8xH100"), kinds) == (
        7,
        ["2 degraded, refused while excludeUnhealthy is true", "1 in MIG mode", "4 of another model than H100"],
    )
    assert excluded_free(parse_request("8xH100 allow-unhealthy"), kinds) == (
        5,
        ["1 in MIG mode", "4 of another model than H100"],
    )
    # No model asked for: every model is a candidate (placement never mixes them in one job).
    assert excluded_free(parse_request("8xH100").with_(model=None), kinds) == (
        7,
        ["6 degraded, refused while excludeUnhealthy is true", "1 in MIG mode"],
    )


async def test_a_host_without_the_impaired_count_has_its_gpus_read(gateway: Gateway) -> None:
    """site_free_excluded sums a host with no impaired GPU from its counters and reads the GPUs of
    the others, a host with no count at all (a graph before v9) among them: the same kinds."""
    worn, clean = _site("worn", seed=0, degraded=(3, 5)), _site("clean", seed=1)
    for cluster in (worn, clean):
        await load(gateway, cluster)
    sites = [
        SiteIn(
            name="both", kind=SiteKind.ON_PREM, capacity_kinds=[CapacityKind.OWNED], clusters=[worn.name, clean.name]
        )
    ]
    await put_sites(gateway, SiteCatalog(sites=sites), time.time())
    model = worn.hosts[0].gpus[0].model
    expected = [FreeGPUs(model, False, False, 14), FreeGPUs(model, False, True, 2)]
    assert await site_free_gpus(gateway, "both") == expected
    hosts = [worn.hosts[0].hostname, clean.hosts[0].hostname]
    await with_test_queries(gateway).write("host_impaired_set", {"hosts": hosts, "value": None})
    assert await site_free_gpus(gateway, "both") == expected
