"""The explorer in real headless Chromium (Debian's, driven by Playwright), offline: every
view and flow an operator uses, checked through what the page shows; screenshots and render
times go to docs/ only with GRAPHSVC_UPDATE_DOCS=1 (tests/ui/conftest.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphsvc.placement.options import OPTIONS
from tests.service import ServiceProcess

TIMINGS: dict[str, Any] = {}


def open_view(page: Any, url: str) -> float:
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('#view[data-ready="true"]', timeout=60_000)
    return round((time.perf_counter() - started) * 1000)


def gql(service: ServiceProcess, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = httpx.post(f"{service.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=60)
    body: dict[str, Any] = resp.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def usable_free(service: ServiceProcess) -> int:
    rows = gql(service, "{ clusterSummary { gpusByModel { state health gpus } } }")["clusterSummary"]["gpusByModel"]
    return sum(r["gpus"] for r in rows if r["state"] == "free" and r["health"] in ("ok", "unknown"))


def free_total(page: Any) -> int:
    return int(page.inner_text("#free-total"))


def shot(page: Any, docs: Path, name: str) -> None:
    page.screenshot(path=str(docs / "screenshots" / f"{name}.png"), full_page=False)


@pytest.fixture(scope="module", autouse=True)
def write_timings(docs_dir: Path) -> Any:
    yield
    if TIMINGS:
        path = docs_dir / "benchmarks" / "ui.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**old, **TIMINGS}, indent=1, sort_keys=True) + "\n")


def test_overview_counts_labels_filters_zoom(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    TIMINGS["overview_ms"] = open_view(page, f"{service.url}/ui/#/overview")
    TIMINGS["overview_render_ms"] = int(page.get_attribute("#view", "data-render-ms"))
    TIMINGS["gpus"] = 1184
    assert "1184 GPUs" in page.inner_text("h2")
    # free means free AND healthy: the number placement can actually use
    assert free_total(page) == usable_free(service)
    groups = page.locator("section.group")
    assert groups.count() >= 7  # 4 SUs, the NVL72 rack, the A100 and L40S racks
    assert "one NVLink domain" in page.inner_text('section.group[data-group="gb200-su1"]')
    # a numeric legend, and each GPU drawn once (canvas: no DOM node per GPU)
    assert page.inner_text(".legend .ticks").split() == ["25", "41", "58", "74", "90"]
    assert sum(int(c) for c in page.eval_on_selector_all("canvas.cells", "cs => cs.map(c => c.dataset.cells)")) == 1184
    shot(page, docs_dir, "overview")

    # hover shows the host label and GPU; click opens the host
    canvas = page.locator('section.group[data-group="h100-su1"] canvas.cells')
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 8)  # the first host's label
    assert "h100-su1-n01" in page.inner_text("#tip")

    # filters: GB200 only
    page.select_option('#filters select[name="model"]', "NVIDIA GB200")
    page.wait_for_function("location.hash.includes('model=')")
    page.wait_for_selector('#view[data-ready="true"]')
    assert page.locator("section.group").count() == 1
    assert page.inner_text("#shown") == "72 GPUs match"
    page.select_option('#filters select[name="health"]', "bad")
    page.wait_for_function("location.hash.includes('health=bad')")
    page.wait_for_selector('#view[data-ready="true"]')
    assert int(page.inner_text("#shown").split()[0]) < 72
    # a family in the URL, as placement reads one (it showed "0 GPUs match" and a blank select)
    open_view(page, f"{service.url}/ui/#/overview?model=GB200")
    assert page.inner_text("#shown") == "72 GPUs match"
    assert page.eval_on_selector('#filters select[name="model"]', "s => s.value") == "GB200"
    open_view(page, f"{service.url}/ui/#/overview?color=utilization")
    assert "GPU utilization" in page.inner_text(".legend")

    # zoom: the same cells, drawn bigger
    width = page.eval_on_selector("canvas.cells", "c => c.width")
    page.click('button[data-zoom="2"]')
    page.wait_for_selector('#view[data-ready="true"]')
    assert page.eval_on_selector("canvas.cells", "c => c.width") > width
    page.click('button[data-zoom="-2"]')
    page.wait_for_selector('#view[data-ready="true"]')

    page.mouse.move(box["x"] + 20, box["y"] + 8)
    page.mouse.click(box["x"] + 20, box["y"] + 8)
    page.wait_for_function("location.hash.startsWith('#/host/')")


def test_host_view_topo_classes_nics_by_rail(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    open_view(page, f"{service.url}/ui/#/host/h100-su1-n01")
    assert page.locator("#matrix td.c-NV").count() == 56  # 8x8 minus the diagonal, all NV18
    rails = page.eval_on_selector_all("#nics tr td:first-child", "tds => tds.map(t => t.textContent)")
    assert rails == sorted(rails, key=int) and len(rails) == 8
    swatch = page.locator("#gpus .swatch").first.bounding_box()
    assert swatch["width"] >= 12  # a visible swatch, not 2 px
    assert page.evaluate("['mlx5_10', 'mlx5_3', 'mlx5_0', 'mlx5_11'].sort(natural)") == [
        "mlx5_0", "mlx5_3", "mlx5_10", "mlx5_11"
    ]  # fmt: skip
    shot(page, docs_dir, "host")
    open_view(page, f"{service.url}/ui/#/host/a100-001")
    cells = set(page.eval_on_selector_all("#matrix td", "tds => tds.map(t => t.textContent)"))
    assert {"X", "NV12", "NODE", "SYS"} <= cells and "PCIe" not in cells
    assert "across the CPU interconnect" in page.inner_text(".classes")
    shot(page, docs_dir, "host-pcie")


def test_fabric_by_su_and_rail_with_click_through(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    TIMINGS["fabric_ms"] = open_view(page, f"{service.url}/ui/#/fabric")
    assert page.locator("svg#fabric g.switch").count() == 54
    heads = page.eval_on_selector_all("svg#fabric text.head", "ts => ts.map(t => t.textContent)")
    assert {"h100-su1", "gb200-su1", "rail 0", "rail 7", "spine"} <= set(heads)
    su1 = page.eval_on_selector_all(
        'svg#fabric g.leaf[data-su="h100-su1"]', "gs => gs.map(g => g.textContent.replace(/\\s+/g, ' ').trim())"
    )
    assert len(su1) == 8 and all(text.startswith("rail ") and " free" in text for text in su1)
    page.click('svg#fabric g.switch[data-name="h100-su1-leaf-r3"]')
    page.wait_for_selector("#leaf-panel ul.leaf-hosts a")
    assert page.locator("svg#fabric line.up.hot").count() > 0
    assert page.locator("#leaf-panel ul.leaf-hosts a").count() == 31
    shot(page, docs_dir, "fabric")
    page.click('svg#fabric g.switch[data-name="a100-leaf0"]')  # a leaf outside any scalable unit
    page.wait_for_function("document.querySelector('#leaf-panel h3').textContent === 'a100-leaf0'")
    page.wait_for_selector("#leaf-panel ul.leaf-hosts a")
    assert page.locator("#leaf-panel ul.leaf-hosts a").count() == 8
    page.click("#leaf-panel ul.leaf-hosts a >> nth=0")
    page.wait_for_selector('#view[data-ready="true"] #matrix')
    assert "a100-001" in page.inner_text("h2")


def test_placement_reserve_renew_release(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    before = usable_free(service)
    q = "8xH100%20nvlink%3Dfull-mesh%20ib-hops%3C%3D1"
    open_view(page, f"{service.url}/ui/#/place?q={q}&holder=ui-test&ttl=30m")
    page.wait_for_selector('#picture[data-picked="8"]', timeout=60_000)  # the candidate's 8 GPUs outlined
    assert page.input_value("#ph") == "ui-test" and page.input_value("#pt") == "30m"
    assert "NVLink" in page.inner_text(".cand")
    shot(page, docs_dir, "placement")
    page.click('button.reserve[data-rank="1"]')
    page.wait_for_selector("#banner:not([hidden])", timeout=30_000)
    banner = page.inner_text("#banner")
    assert banner.startswith("Reserved rsv-") and "8 GPUs for ui-test" in banner
    # 30 minutes less the time from the server's clock read to the banner (seconds on a loaded machine)
    assert re.search(r"in (30m|29m \d+s)", banner), banner
    page.wait_for_selector('#view[data-ready="true"] #picture[data-picked="8"]', timeout=60_000)  # refreshed
    rid = banner.split()[1].rstrip(":")

    open_view(page, f"{service.url}/ui/#/overview")
    assert free_total(page) == before - 8

    gql(service, 'mutation { reserve(input: {holder: "ui-gone", ttlSeconds: 60, request: {gpus: 1}}) { __typename } }')
    gone = gql(service, '{ reservations(filter: {holder: "ui-gone"}) { id } }')["reservations"][0]["id"]
    gql(service, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": gone})
    open_view(page, f"{service.url}/ui/#/reservations")
    states = page.eval_on_selector_all("#reservations tr[data-id]", "rs => rs.map(r => r.className)")
    assert states.index("ended") > states.index("active") and states == sorted(states)  # active first
    assert page.locator(f'#reservations tr[data-id="{rid}"] .countdown').inner_text().startswith("in ")
    page.click(f'#reservations tr[data-id="{rid}"] button.renew')
    page.wait_for_function("document.querySelector('#banner').textContent.startsWith('Renewed')")
    shot(page, docs_dir, "reservations")
    page.click('#reservations th[data-sort="holder"]')
    page.wait_for_selector('#reservations th.sort.asc[data-sort="holder"]')
    holders = page.eval_on_selector_all("#reservations tr[data-id] td:nth-child(2)", "ts => ts.map(t => t.textContent)")
    assert holders == sorted(holders)

    release = f'#reservations tr[data-id="{rid}"] button.release'
    page.click(release)  # asks first
    assert page.inner_text(release) == "confirm release"
    page.click(f'#reservations tr[data-id="{rid}"] button.cancel')
    assert page.inner_text(release) == "release"
    page.click(release)
    page.click(release)
    page.wait_for_function(f"!document.querySelector('#reservations tr[data-id=\"{rid}\"] button.release')")
    open_view(page, f"{service.url}/ui/#/overview")
    assert free_total(page) == before


def test_playground_explains_a_typo_and_lists_every_option(service: ServiceProcess, page: Any) -> None:
    open_view(page, f"{service.url}/ui/#/place?q=8xH100%20nvlnk%3Dfull-mesh")
    assert "did you mean 'nvlink'?" in page.inner_text("#candidates .error")
    assert page.eval_on_selector("#options", "d => d.open")
    listed = page.inner_text("#options")
    assert all(option.rstrip("=<>") in listed for option in OPTIONS)
    page.click('#options code[data-opt="rail-aligned"]')
    assert page.input_value("#pq").endswith("rail-aligned")


def test_search_is_served_by_the_api(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    open_view(page, f"{service.url}/ui/#/search?q=su3-n17")
    assert page.locator(".hits li a").first.inner_text() == "h100-su3-n17"
    shot(page, docs_dir, "search")
    page.fill("#search input", "l40s-002")
    page.press("#search input", "Enter")  # an exact name goes straight to the host
    page.wait_for_selector('#view[data-ready="true"] #matrix', timeout=30_000)
    assert "l40s-002" in page.inner_text("h2")


def test_live_refresh_from_the_events_subscription(service: ServiceProcess, page: Any) -> None:
    open_view(page, f"{service.url}/ui/#/reservations")
    page.wait_for_function("document.querySelector('#live').textContent.includes('live')", timeout=30_000)
    out = gql(service, 'mutation { reserve(input: {holder: "ui-live", ttlSeconds: 120, request: {gpus: 2}}) '
                       "{ ... on Reservation { id } } }")["reserve"]  # fmt: skip
    try:
        page.wait_for_selector(f'#reservations tr[data-id="{out["id"]}"]', timeout=30_000)  # no reload by us
    finally:
        gql(service, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": out["id"]})


def test_page_helpers_parse_leases_and_write_gpu_sets(service: ServiceProcess, page: Any) -> None:
    open_view(page, f"{service.url}/ui/#/place")
    got = page.evaluate("[['90s', '30m', '4h', '1d', '45', 'forever', '0m'].map(parseTtl), ranges([3, 0, 1, 2, 6, 7])]")
    assert got == [[90, 1800, 14400, 86400, 45, None, None], "0-3,6-7"]
