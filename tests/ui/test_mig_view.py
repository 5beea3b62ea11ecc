"""MIG slices in the explorer (#17): the placement playground answers `2x 3g.40gb` in slices and
reserves them, the reservations view says which slices a reservation holds, and a host's page
lists its slices with their state and holder."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import pytest

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.integration.test_mig_slices import LAYOUT, with_mig
from tests.service import ServiceProcess
from tests.ui.conftest import offline_page
from tests.ui.test_explorer import open_view


def mig_cluster() -> SyntheticCluster:
    """Two H100 hosts: GPUs 0-2 of the first and GPU 0 of the second partitioned (LAYOUT)."""
    c = SyntheticCluster("default")
    add_spines(c, add_superpod_h100(c, 1, seed=4), prefix="spine", sus=1)
    c.hosts = [with_mig(h, LAYOUT[i]) for i, h in enumerate(c.hosts[:2])]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in {h.hostname for h in c.hosts}]
    return c


@pytest.fixture(scope="module")
def mig_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServiceProcess, SyntheticCluster]]:
    svc = ServiceProcess(tmp_path_factory.mktemp("ui-mig") / "data", env={"GRAPHSVC_DEV_MODE": "true"})
    svc.start()
    cluster = mig_cluster()
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread: push from another
        pool.submit(asyncio.run, push_cluster(svc.url, cluster)).result()
    yield svc, cluster
    svc.stop()


def test_mig_slices_are_placed_reserved_and_shown(
    mig_service: tuple[ServiceProcess, SyntheticCluster], page: Any
) -> None:
    svc, cluster = mig_service
    first = cluster.hosts[0].hostname
    with offline_page(page, svc.url) as p:
        open_view(p, f"{svc.url}/ui/#/place?q={quote('2x 3g.40gb')}&holder=nb-ui&ttl=1h")
        p.wait_for_selector(".cand.mig")
        best = p.locator(".cand.mig").first
        assert "one GPU" in best.inner_text()
        assert best.locator("ul.slices li").count() == 2
        assert all("3g.40gb" in t for t in best.locator("ul.slices li").all_inner_texts())
        best.locator("button.reserve-mig").click()
        p.wait_for_selector("#banner:not([hidden]) b")
        assert "2 MIG slices for nb-ui" in p.inner_text("#banner")
        rid = p.inner_text("#banner b")

        open_view(p, f"{svc.url}/ui/#/reservations")
        p.wait_for_selector(".mig-slice")
        row = p.locator("tr", has_text=rid).first
        assert "2 MIG slices" in row.inner_text() and "3g.40gb" in row.inner_text()

        open_view(p, f"{svc.url}/ui/#/host/{first}")
        p.wait_for_selector("#mig-slices")
        held = p.locator("#mig-slices tr", has_text=rid)
        assert held.count() == 2 and all("reserved" in t for t in held.all_inner_texts())
        # Eleven slices on this host (LAYOUT): the other nine still free.
        assert p.locator("#mig-slices tr", has_text="free").count() == 9
