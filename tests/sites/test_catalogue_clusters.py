"""A cluster that only a site catalogue made goes when the catalogue stops naming it (both stores).

A catalogue may name a cluster before its hosts arrive (capacity being built): `sites_replace`
MERGEs it. Until stop 65 a later catalogue that no longer named it left it behind, listed with
0 hosts by `clusters` (the explorer's fabric view) and never removed. A cluster with hosts, or one
the new catalogue still names, stays.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from topo_facts import HostFacts

from graphsvc.ingest.service import ingest_host
from graphsvc.sites.catalog import SiteCatalog
from graphsvc.sites.store import put_sites
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.hosts import HostSpec, dgx_h100


def _host(name: str, cluster: str) -> HostFacts:
    return dgx_h100(HostSpec(name, cluster, f"{cluster}-rack", None, 7))


def _catalog(*sites: tuple[str, list[str]]) -> SiteCatalog:
    body: dict[str, Any] = {
        "sites": [{"name": n, "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": c} for n, c in sites]
    }
    return SiteCatalog.model_validate(body)


async def _clusters(gw: Gateway) -> list[tuple[str, int]]:
    return [(r["name"], int(r["hosts"])) for r in await gw.read("clusters")]


async def test_an_empty_cluster_goes_with_the_catalogue_that_named_it(gateway: Gateway) -> None:
    await ingest_host(gateway, _host("a1", "built"))
    await put_sites(gateway, _catalog(("site-a", ["built", "planned", "kept"])), time.time())
    assert await _clusters(gateway) == [("built", 1), ("kept", 0), ("planned", 0)]

    rows = await gateway.write("sites_replace", _catalog(("site-b", ["kept"])).params(time.time()))
    assert rows[0]["clusters_removed"] == 1
    # "planned" held nothing and no site names it: gone. "built" has a host: it stays, in no site.
    # "kept" is still named.
    assert await _clusters(gateway) == [("built", 1), ("kept", 0)]

    # An empty catalogue drops "kept" too; the built cluster and its host are untouched.
    assert await put_sites(gateway, SiteCatalog.model_validate({"sites": []}), time.time()) == 0
    assert await _clusters(gateway) == [("built", 1)]


async def test_a_cluster_named_again_is_not_removed(gateway: Gateway) -> None:
    await put_sites(gateway, _catalog(("site-a", ["planned"])), time.time())
    # The same cluster moves to another site: the new catalogue names it, so it is not dropped.
    rows = await gateway.write("sites_replace", _catalog(("site-b", ["planned"])).params(time.time()))
    assert rows[0]["clusters_removed"] == 0
    assert await _clusters(gateway) == [("planned", 0)]


def test_an_empty_cluster_is_judged_in_one_fragment() -> None:
    """sites_replace and remove_host counted an empty cluster's racks, hosts and switches each in
    its own copy (remove_host also its sites); both now include one fragment, and neither counts
    on its own."""
    queries = Path(__file__).resolve().parents[2] / "queries"
    fragment = (queries / "fragments" / "drop_empty_clusters.cypher").read_text(encoding="utf-8")
    assert "cluster_rack" in fragment and "cluster_site" in fragment
    for name in ("sites_replace", "remove_host"):
        text = (queries / f"{name}.cypher").read_text(encoding="utf-8")
        assert "\n//@include drop_empty_clusters\n" in text, name
        assert "cluster_rack" not in text and "cluster_switch" not in text, name
