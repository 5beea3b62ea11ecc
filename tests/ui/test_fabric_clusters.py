"""The fabric view of a cluster other than "default", in real headless Chromium, on both stores:
its leaves' free counts are that cluster's (`leafLoad(cluster:)`), clicking a switch keeps the
cluster in the URL (a reload or a shared link opens the same fabric), and a leaf with no rail
is drawn below the rail leaves of its scalable unit, not on top of one (a probe's cases)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from topo_facts import FabricFacts, FabricSwitch, NICUplink, SwitchTier, SwitchUplink

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.stores import STORES
from tests.ui.conftest import offline_page, store_service
from tests.ui.test_explorer import gql, open_view

CLUSTER = "xa"
RAILED, UNRAILED, SPINE = "xa-leaf-r0", "xa-leaf-x", "xa-spine0"


async def _load(url: str) -> None:
    """A "default" cluster with a fabric of its own, and cluster xa: one scalable unit with a
    rail-0 leaf and a leaf with no rail (one host cabled to each), under one spine."""
    await push_cluster(url, build("l40s:hosts=1"))
    xa = build("a100-pcie:hosts=2", cluster=CLUSTER)
    await push_cluster(url, xa)
    first, second = xa.hosts[0], xa.hosts[1]
    fabric = FabricFacts(
        cluster=CLUSTER,
        switches=[
            FabricSwitch(name=RAILED, tier=SwitchTier.LEAF, scalable_unit="xa-su1", rail=0),
            FabricSwitch(name=UNRAILED, tier=SwitchTier.LEAF, scalable_unit="xa-su1"),
            FabricSwitch(name=SPINE, tier=SwitchTier.SPINE),
        ],
        nic_uplinks=[
            NICUplink(host=h.hostname, nic=n.name, switch=leaf, bandwidth_gbps=25)
            for h, leaf in ((first, RAILED), (second, UNRAILED))
            for n in h.nics
        ],
        switch_uplinks=[SwitchUplink(lower=leaf, upper=SPINE, bandwidth_gbps=400) for leaf in (RAILED, UNRAILED)],
    )
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        resp = await client.put(
            "/v1/fabric", content=fabric.model_dump_json(), headers={"content-type": "application/json"}
        )
        assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module", params=STORES)
def fabric_service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    with store_service(request, tmp_path_factory, "ui-fabric", _load) as svc:
        yield svc


def _leaf_counts(p: Any) -> dict[str, str]:
    """Each drawn leaf's "free/all free" label, by switch name."""
    counts: dict[str, str] = p.eval_on_selector_all(
        "svg#fabric g.leaf",
        "gs => Object.fromEntries(gs.map(g => [g.dataset.name, g.querySelectorAll('text')[1].textContent]))",
    )
    return counts


def test_leaf_counts_are_the_shown_clusters(fabric_service: ServiceProcess, page: Any) -> None:
    load = gql(fabric_service, 'query { leafLoad(cluster: "xa") { leaf gpus freeGpus } }')["leafLoad"]
    want = {row["leaf"]: f"{row['freeGpus']}/{row['gpus']} free" for row in load}
    assert set(want) == {RAILED, UNRAILED} and all(row["gpus"] > 0 for row in load), load
    with offline_page(page, fabric_service.url) as p:
        open_view(p, f"{fabric_service.url}/ui/#/fabric?cluster={CLUSTER}")
        assert p.get_attribute("#fabric-title", "data-cluster") == CLUSTER
        assert _leaf_counts(p) == want
        p.click(f'svg#fabric g.switch[data-name="{RAILED}"]')
        p.wait_for_selector("#leaf-panel ul.leaf-hosts a")
        row = next(r for r in load if r["leaf"] == RAILED)
        assert f"{row['freeGpus']}/{row['gpus']} GPUs free" in p.inner_text("#leaf-panel")


def test_clicking_a_switch_keeps_the_cluster_in_the_url(fabric_service: ServiceProcess, page: Any) -> None:
    with offline_page(page, fabric_service.url) as p:
        open_view(p, f"{fabric_service.url}/ui/#/fabric?cluster={CLUSTER}")
        p.click(f'svg#fabric g.switch[data-name="{SPINE}"]')
        p.wait_for_function(f"document.querySelector('#leaf-panel h3')?.textContent === {SPINE!r}")
        hash_ = p.evaluate("location.hash")
        assert f"cluster={CLUSTER}" in hash_ and f"leaf={SPINE}" in hash_, hash_
        p.reload()
        p.wait_for_selector('#view[data-ready="true"]', timeout=60_000)
        assert p.get_attribute("#fabric-title", "data-cluster") == CLUSTER
        assert p.inner_text("#leaf-panel h3") == SPINE
        assert p.get_attribute(f'svg#fabric g.switch[data-name="{SPINE}"]', "class") == "switch selected"


def test_a_leaf_with_no_rail_is_not_drawn_over_a_rail_leaf(fabric_service: ServiceProcess, page: Any) -> None:
    with offline_page(page, fabric_service.url) as p:
        open_view(p, f"{fabric_service.url}/ui/#/fabric?cluster={CLUSTER}")
        boxes = {
            name: p.locator(f'svg#fabric g.leaf[data-name="{name}"] rect').first.bounding_box()
            for name in (RAILED, UNRAILED)
        }
        a, b = boxes[RAILED], boxes[UNRAILED]
        overlap = a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
        overlap = overlap and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]
        assert not overlap, boxes
        svg = p.locator("svg#fabric").bounding_box()
        assert b["y"] + b["height"] <= svg["y"] + svg["height"], (b, svg)  # inside the drawing
        for name in (RAILED, UNRAILED):  # each one takes the click (nothing drawn over it)
            p.click(f'svg#fabric g.leaf[data-name="{name}"]', timeout=5_000)
            p.wait_for_function(f"document.querySelector('#leaf-panel h3')?.textContent === {name!r}")


def test_the_overview_filters_by_cluster_by_that_name(fabric_service: ServiceProcess, page: Any) -> None:
    """The overview's cluster filter was called `site` (a site is another concept, docs/sites.md);
    `cluster=` names it now, old `site=` links still work, and a host's cluster links to it."""
    hosts = gql(fabric_service, "query { hosts(first: 50) { nodes { name cluster gpuCount } } }")["hosts"]["nodes"]
    xa = sorted(h["name"] for h in hosts if h["cluster"] == CLUSTER)
    want = f"{sum(h['gpuCount'] for h in hosts if h['cluster'] == CLUSTER)} GPUs match"
    with offline_page(page, fabric_service.url) as p:
        for query in (f"cluster={CLUSTER}", f"site={CLUSTER}"):
            open_view(p, f"{fabric_service.url}/ui/#/overview?{query}")
            assert p.inner_text("#shown") == want, query
            assert p.eval_on_selector('#filters select[name="cluster"]', "s => s.value") == CLUSTER
        open_view(p, f"{fabric_service.url}/ui/#/host/{xa[0]}")
        p.click(f'#view a[href="#/overview?cluster={CLUSTER}"]')
        p.wait_for_function("location.hash.includes('cluster=')")
        p.wait_for_selector('#view[data-ready="true"]')
        assert p.inner_text("#shown") == want
