"""Stale hosts are marked where an operator looks: the header, the group, the host's row
(dashed outline and a warning sign, and the tooltip says how old its facts are), the host page."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.ui.conftest import offline_page
from tests.ui.test_explorer import open_view


@pytest.fixture(scope="module")
def stale_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    env = {"GRAPHSVC_DEV_MODE": "true", "GRAPHSVC_STALE_AFTER_S": "1"}
    svc = ServiceProcess(tmp_path_factory.mktemp("ui-stale") / "data", env=env)
    svc.start()
    cluster = build("demo:sus=1,nvl72_racks=0,a100_hosts=2,l40s_hosts=0")
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, push_cluster(svc.url, cluster)).result()
    time.sleep(1.5)  # facts older than the 1 s staleness threshold: not a timing assertion
    yield svc
    svc.stop()


def test_stale_hosts_are_marked(stale_service: ServiceProcess, page: Any) -> None:
    with offline_page(page, stale_service.url) as p:
        open_view(p, f"{stale_service.url}/ui/#/overview")
        hosts = int(p.inner_text("h2").split(" hosts")[0].split()[-1])
        assert f"{hosts} stale hosts" in p.inner_text("h2")
        assert "stale hosts" in p.inner_text("section.group .counts")
        box = p.locator("canvas.cells").first.bounding_box()
        p.mouse.move(box["x"] + 20, box["y"] + 8)  # the first host's label
        p.wait_for_selector("#tip:not([hidden])")
        assert "STALE: facts" in p.inner_text("#tip")
        open_view(p, f"{stale_service.url}/ui/#/host/a100-001")
        assert "stale" in p.inner_text("#view p")
