"""The explorer in real headless Chromium (Debian's, driven by Playwright): every view, a
placement highlighted, a reservation made and released, and no request leaving the service."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.service import ServiceProcess


def open_view(page: Any, url: str) -> float:
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('#view[data-ready="true"]', timeout=60_000)
    return (time.perf_counter() - started) * 1000


def free_total(page: Any) -> int:
    return int(page.inner_text("#free-total"))


def test_every_view_placement_reserve_release(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    base = f"{service.url}/ui/"
    docs = docs_dir
    SHOTS = docs / "screenshots"
    timings: dict[str, Any] = {}

    timings["overview_ms"] = open_view(page, base + "#/overview")
    assert "1184 GPUs" in page.inner_text("h2")
    groups = page.locator("section.group").count()
    assert groups >= 6  # 4 SUs, the NVL72 rack, the PCIe racks
    before = free_total(page)
    page.screenshot(path=str(SHOTS / "overview.png"), full_page=True)
    open_view(page, base + "#/overview?color=utilization")
    assert "GPU utilization" in page.inner_text(".legend")

    timings["fabric_ms"] = open_view(page, base + "#/fabric")
    assert page.locator("svg#fabric g.switch").count() > 40
    page.screenshot(path=str(SHOTS / "fabric.png"), full_page=True)

    open_view(page, base + "#/host/h100-su1-n01")
    assert page.locator("#matrix td.nv").count() == 56  # 8x8 minus the diagonal, all NV18
    assert "NV18" in page.inner_text("#matrix")
    assert page.locator("#nics tr").count() == 9
    page.screenshot(path=str(SHOTS / "host.png"), full_page=True)

    open_view(page, base + "#/place?q=" + "8xH100%20nvlink%3Dfull-mesh%20ib-hops%3C%3D1")
    page.wait_for_selector("#picture .gpu.picked", timeout=60_000)
    assert page.locator("#picture .gpu.picked").count() == 8  # the candidate's GPUs, highlighted
    assert "NVLink" in page.inner_text(".cand")
    page.screenshot(path=str(SHOTS / "placement.png"), full_page=True)
    page.click('button.reserve[data-rank="1"]')
    page.wait_for_function("document.querySelector('#status').textContent.startsWith('reserved')", timeout=30_000)

    open_view(page, base + "#/overview")
    assert free_total(page) == before - 8

    open_view(page, base + "#/reservations")
    assert page.locator("#reservations button.release").count() == 1
    page.screenshot(path=str(SHOTS / "reservations.png"), full_page=True)
    page.click("#reservations button.release")
    page.wait_for_function("document.querySelectorAll('#reservations button.release').length === 0", timeout=30_000)

    open_view(page, base + "#/overview")
    assert free_total(page) == before

    page.fill("#search input", "l40s-002")
    page.press("#search input", "Enter")
    page.wait_for_selector("#matrix", timeout=30_000)
    assert "l40s-002" in page.inner_text("h2")

    timings["gpus"] = 1184
    (docs / "benchmarks" / "ui.json").write_text(json.dumps(timings, indent=1))
