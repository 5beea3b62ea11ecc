"""The overview at 10,000 GPUs: drawn on canvas, so the page holds one element per group, not
per GPU. The render time is measured and recorded (docs/ui.md), not asserted: the machine is
shared and loaded, and tests bound work, not time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.ui.conftest import offline_page
from tests.ui.test_explorer import open_view

GPUS = 10_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    svc = ServiceProcess(tmp_path_factory.mktemp("ui-scale") / "data", env={"GRAPHSVC_DEV_MODE": "true"})
    svc.start()
    cluster = build(f"sized:gpus={GPUS}")
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
        pool.submit(asyncio.run, push_cluster(svc.url, cluster)).result()
    yield svc
    svc.stop()


def test_overview_at_10k_gpus(big: ServiceProcess, page: Any, docs_dir: Path) -> None:
    with offline_page(page, big.url) as p:
        total_ms = open_view(p, f"{big.url}/ui/#/overview")
        assert f"{GPUS} GPUs" in p.inner_text("h2")
        cells = p.eval_on_selector_all("canvas.cells", "cs => cs.map(c => Number(c.dataset.cells))")
        assert sum(cells) == GPUS
        assert p.evaluate("document.querySelectorAll('*').length") < 2_000  # no element per GPU
        render_ms = int(p.get_attribute("#view", "data-render-ms"))
        fetch_ms = int(p.get_attribute("#view", "data-fetch-ms"))
        # still interactive: hover a GPU, filter, zoom (each a re-render from the cached data)
        box = p.locator("canvas.cells").first.bounding_box()
        p.mouse.move(box["x"] + box["width"] - 10, box["y"] + 8)
        p.wait_for_selector("#tip:not([hidden])")
        assert "GPU" in p.inner_text("#tip")
        for _ in range(3):  # zoom out to see more of it: a re-render from the cached data
            p.click('button[data-zoom="-2"]')
            p.wait_for_selector('#view[data-ready="true"]')
        zoom_render_ms = int(p.get_attribute("#view", "data-render-ms"))
        p.screenshot(path=str(docs_dir / "screenshots" / "overview-10k.png"))
        first_group = p.eval_on_selector("section.group", "g => g.dataset.group")
        filter_ms = open_view(p, f"{big.url}/ui/#/overview?state=usable&su={first_group}")
        filter_render_ms = int(p.get_attribute("#view", "data-render-ms"))
        assert p.locator("section.group").count() == 1
    path = docs_dir / "benchmarks" / "ui.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    scale = {"gpus": GPUS, "open_ms": total_ms, "render_ms": render_ms, "fetch_ms": fetch_ms,
             "filter_open_ms": filter_ms, "filter_render_ms": filter_render_ms,
             "zoom_render_ms": zoom_render_ms}  # fmt: skip
    path.write_text(json.dumps({**old, "overview_10k": scale}, indent=1, sort_keys=True) + "\n")
