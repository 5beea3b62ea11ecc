"""The explorer's faults a tester found in real headless Chromium (probe 63), one test each:
live refresh from the events stream (CRLF-framed SSE), a slow view's late render over a newer
one, more than 500 reservations, the Back button after an exact search, a failed reserve
request, a group taller than a canvas may be, leaf links of another cluster, same-named
scalable units in two clusters, sites links with only q=, a 401's reason and a malformed
host URL. Races are made deterministic with in-page delays (a `fetch` wrapper added before the
page loads) or route interception, never with timings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from topo_facts import FabricFacts, FabricSwitch, NICUplink, SwitchTier

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import SyntheticCluster, build
from tests.service import ServiceProcess
from tests.ui.conftest import offline_page
from tests.ui.test_explorer import gql, open_view

CLUSTERS = ("west", "east")
# Hosts of cluster "flat", one group: at zoom 28 and DPR 3 taller than a canvas may be in this
# Chromium (65,535 pixels a side, 268 M pixels; the probe's 2,200 hosts at DPR 2 drew nothing).
FLAT = 680

# Every GraphQL request whose body names `marker` waits on window.__hold[marker] (a promise the
# test resolves with window.__release(marker)); window.__seen[marker] counts those started and
# window.__done[marker] those answered. In the page, so no request is serialised by a route handler.
HOLD = """(() => {
  const f = window.fetch;
  window.__hold = {}; window.__gate = {}; window.__seen = {}; window.__done = {};
  window.__block = (m) => { window.__hold[m] = new Promise((r) => { window.__gate[m] = r; }); };
  window.__release = (m) => { (window.__gate[m] || (() => {}))(); delete window.__hold[m]; };
  window.fetch = async (u, o) => {
    const body = o && typeof o.body === "string" ? o.body : "";
    const m = Object.keys(window.__hold).find((k) => body.includes(k));
    if (!m) return f(u, o);
    window.__seen[m] = (window.__seen[m] || 0) + 1;
    const held = window.__hold[m];
    await held;
    try { return await f(u, o); } finally { window.__done[m] = (window.__done[m] || 0) + 1; }
  };
})();"""


def _in_thread(fn: Any, *args: Any) -> Any:
    """Playwright's event loop may run in this thread: run asyncio code on another."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, fn(*args)).result()


def _cluster(name: str) -> tuple[SyntheticCluster, FabricFacts]:
    """Two L40S hosts named after the cluster, in scalable unit "su1" and rack "r01" (the same
    names in every cluster, as data halls name them), each NIC cabled to the cluster's one leaf."""
    c = build(f"l40s:hosts=2,seed={11 + CLUSTERS.index(name)}", cluster=name)  # seeds: GPU uuids of their own
    c.hosts = [
        h.model_copy(update={"hostname": f"{name}-{h.hostname}", "scalable_unit": "su1", "rack": "r01"})
        for h in c.hosts
    ]
    c.switches, c.nic_uplinks, c.switch_uplinks = [], [], []
    leaf = f"{name}-leaf0"
    fabric = FabricFacts(
        cluster=name,
        switches=[FabricSwitch(name=leaf, tier=SwitchTier.LEAF, scalable_unit="su1", rail=0)],
        nic_uplinks=[
            NICUplink(host=h.hostname, nic=n.name, switch=leaf, bandwidth_gbps=25) for h in c.hosts for n in h.nics
        ],
        switch_uplinks=[],
    )
    return c, fabric


async def _load_two(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for name in CLUSTERS:
            cluster, fabric = _cluster(name)
            await push_cluster(url, cluster)
            resp = await client.put(
                "/v1/fabric", content=fabric.model_dump_json(), headers={"content-type": "application/json"}
            )
            assert resp.status_code == 200, resp.text
    flat = build(f"l40s:hosts={FLAT},seed=13", cluster="flat")  # no rack (a collector without --rack)
    flat.hosts = [h.model_copy(update={"rack": None, "scalable_unit": None}) for h in flat.hosts]
    flat.switches, flat.nic_uplinks, flat.switch_uplinks = [], [], []
    await push_cluster(url, flat)


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """Clusters west and east: two hosts each, the same scalable unit and rack names, a leaf each;
    cluster flat: FLAT hosts with no rack or scalable unit and no fabric."""
    env = {"GRAPHSVC_DEV_MODE": "true", "GRAPHSVC_STALE_AFTER_S": "86400"}
    svc = ServiceProcess(tmp_path_factory.mktemp("ui-faults") / "data", env=env)
    svc.start()
    try:
        _in_thread(_load_two, svc.url)
        yield svc
    finally:
        svc.stop()


def _ready(p: Any) -> None:
    p.wait_for_selector('#view[data-ready="true"]', timeout=60_000)


def _go(p: Any, hash_: str) -> None:
    """Open a view by its hash and wait until that route has rendered."""
    p.evaluate("h => { document.querySelector('#view').dataset.ready = 'false'; location.hash = h; }", hash_)
    _ready(p)


# ---- 1: live refresh from the events stream ----------------------------------------------------


def test_the_sse_parser_reads_every_line_ending_and_bounds_its_buffer(service: ServiceProcess, page: Any) -> None:
    """The service ends each event with CRLF CRLF; a chunk may split anywhere, even a CR from its LF."""
    open_view(page, f"{service.url}/ui/#/place")
    got = page.evaluate("""() => {
      const out = [];
      const p = new SSEParser((e) => out.push(e));
      const wire = 'event: next\\r\\ndata: {"a":1}\\r\\n\\r\\n: ping\\r\\n\\r\\n'
        + 'event: next\\ndata: {"b":\\ndata: 2}\\n\\n'
        + 'data: {"c":3}\\r\\rdata: {"d":4}\\r\\n\\r\\n';
      for (let i = 0; i < wire.length; i += 3) p.push(wire.slice(i, i + 3));
      const big = new SSEParser(() => {}, 1000);
      big.push('data: ' + 'x'.repeat(5000));
      return { out, buffered: big.buffered };
    }""")
    assert got["out"] == [
        {"event": "next", "data": '{"a":1}'},
        {"event": "next", "data": '{"b":\n2}'},
        {"event": "message", "data": '{"c":3}'},
        {"event": "message", "data": '{"d":4}'},
    ]
    assert got["buffered"] <= 1000


def test_a_reservation_refreshes_the_view_from_its_event(service: ServiceProcess, page: Any) -> None:
    """The refresh must come from the event, not from the 30 s poll: the page counts the
    refreshes each cause started (#live data-event-refreshes)."""
    with offline_page(page, service.url) as p:
        open_view(p, f"{service.url}/ui/#/reservations")
        p.wait_for_function("document.querySelector('#live').textContent.includes('live')", timeout=30_000)
        out = gql(service, 'mutation { reserve(input: {holder: "ui-event", ttlSeconds: 120, request: {gpus: 1}}) '
                           "{ ... on Reservation { id } } }")["reserve"]  # fmt: skip
        try:
            p.wait_for_function("Number(document.querySelector('#live').dataset.eventRefreshes || 0) >= 1")
            p.wait_for_selector(f'#reservations tr[data-id="{out["id"]}"]')
            assert p.get_attribute("#live", "data-last-event") == f"reservation.created {out['id']}"
        finally:
            gql(service, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": out["id"]})


# ---- 3: only the latest route renders ------------------------------------------------------


def test_a_slow_view_does_not_paint_over_a_newer_one(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        p.add_init_script(HOLD)
        open_view(p, f"{service.url}/ui/#/reservations")
        p.evaluate("window.__block('gpuGrid')")
        p.evaluate("location.hash = '#/overview'")
        p.wait_for_function("window.__seen.gpuGrid >= 1")  # the overview is waiting for its GPUs
        _go(p, "#/fabric")
        assert p.locator("#fabric-title").count() == 1
        p.evaluate("window.__release('gpuGrid')")
        p.wait_for_function("window.__done.gpuGrid >= 1")
        p.evaluate("new Promise((r) => setTimeout(r, 300))")  # let the late render run, if it would
        assert p.evaluate("location.hash") == "#/fabric"
        assert p.locator("#fabric-title").count() == 1, p.inner_text("#view h2")
        assert p.locator("#filters").count() == 0
        assert p.get_attribute("#view", "data-ready") == "true"


def test_a_refresh_of_an_older_view_does_not_override_a_newer_one(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        p.add_init_script(HOLD)
        open_view(p, f"{service.url}/ui/#/overview")
        p.evaluate("window.__block('gpuGrid')")
        p.evaluate("scheduleRefresh('a test')")  # what an event or the 30 s timer does
        p.wait_for_function("window.__seen.gpuGrid >= 1", timeout=30_000)
        _go(p, "#/host/h100-su1-n01")
        p.evaluate("window.__release('gpuGrid')")
        p.wait_for_function("window.__done.gpuGrid >= 1")
        p.evaluate("new Promise((r) => setTimeout(r, 300))")
        assert p.evaluate("location.hash") == "#/host/h100-su1-n01"
        assert p.locator("#matrix").count() == 1
        assert "h100-su1-n01" in p.inner_text("#view h2")


# ---- 4: more than 500 reservations --------------------------------------------------------

RESERVE = ("mutation($h: String!) { reserve(input: {holder: $h, ttlSeconds: 3600, request: {gpus: 1}}) "
           "{ __typename ... on Reservation { id } ... on Error { message } } }")  # fmt: skip
RELEASE = "mutation($id: String!) { release(id: $id) { __typename } }"


async def _history(url: str, ended: int) -> tuple[list[str], list[str]]:
    """`ended` reservations made and released, then live ones until one's id sorts after the
    500th of all (the first read of 500 by id misses it); returns (active ids, ended ids)."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        # Six cycles at a time, each holding its slot from reserve to release: a slot per call
        # queued every release behind every waiting reserve (asyncio's semaphore is first come,
        # first served), so up to `ended` reservations were held at once and a small cluster
        # rightly answered Infeasible.
        sem = asyncio.Semaphore(6)

        async def call(query: str, variables: dict[str, Any]) -> dict[str, Any]:
            resp = await client.post("/graphql", json={"query": query, "variables": variables})
            data: dict[str, Any] = resp.json()["data"]
            return data

        async def reserve(holder: str) -> str:
            made = (await call(RESERVE, {"h": holder}))["reserve"]
            assert made["__typename"] == "Reservation", made
            rid: str = made["id"]
            return rid

        async def cycle(i: int) -> str:
            async with sem:
                rid = await reserve(f"old-{i}")
                await call(RELEASE, {"id": rid})
                return rid

        gone = list(await asyncio.gather(*[cycle(i) for i in range(ended)]))
        active: list[str] = []
        for i in range(300):  # each is hidden with odds (ended - 500) / ended: bounded, not timed
            rid = await reserve(f"live-{i}")
            if rid not in sorted([*gone, *active, rid])[:500]:
                active.append(rid)
                if len(active) >= 2:
                    break
            else:
                await call(RELEASE, {"id": rid})
                gone.append(rid)
        return active, gone


def test_active_reservations_are_shown_past_500(two: ServiceProcess, page: Any) -> None:
    active, ended = _in_thread(_history, two.url, 560)
    assert len(active) == 2
    try:
        with offline_page(page, two.url) as p:
            open_view(p, f"{two.url}/ui/#/reservations")
            shown = p.eval_on_selector_all(
                "#reservations tr[data-id]", "rs => rs.map((r) => [r.dataset.id, r.className.split(' ')[0]])"
            )
            states = dict(shown)
            assert all(states.get(i) == "active" for i in active), (active, len(shown))
            assert p.inner_text("#res-title").startswith("Reservations: 2 active")
            # ended ones beyond what the view lists are counted, never silently dropped
            listed = sum(1 for _, cls in shown if cls == "ended")
            if listed < len(ended):
                assert f"{len(ended) - listed} more ended" in p.inner_text("#res-title")
    finally:
        for rid in active:
            httpx.post(f"{two.url}/graphql", json={"query": RELEASE, "variables": {"id": rid}}, timeout=30)


# ---- 5: Back after an exact search ------------------------------------------------------------


def test_back_after_an_exact_search_returns_to_the_page_before(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        open_view(p, f"{service.url}/ui/#/overview")
        p.fill("#search input[name=q]", "h100-su1-n01")
        p.press("#search input[name=q]", "Enter")
        p.wait_for_function("location.hash === '#/host/h100-su1-n01'")
        _ready(p)
        p.wait_for_selector("#matrix")
        p.go_back()
        p.wait_for_function("location.hash === '#/overview'", timeout=10_000)
        _ready(p)
        assert p.locator("#filters").count() == 1


# ---- 6: a failed reserve request ----------------------------------------------------------------


def test_a_failed_reserve_request_shows_an_error_and_frees_the_button(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        open_view(p, f"{service.url}/ui/#/place?q=1xH100&holder=ui-fail&ttl=10m")
        button = 'button.reserve[data-rank="1"]'
        p.wait_for_selector(button)

        def refuse(route: Any) -> None:
            if "mutation" in (route.request.post_data or ""):
                route.fulfill(status=502, content_type="text/plain", body="bad gateway")
            else:
                route.fallback()

        p.route("**/graphql", refuse)
        p.click(button)
        p.wait_for_selector("#banner.error:not([hidden])", timeout=10_000)
        assert "502" in p.inner_text("#banner")
        p.wait_for_function(f"!document.querySelector('{button}').disabled")


# ---- 7: a group taller than a canvas may be ------------------------------------------------------


def test_a_group_taller_than_a_canvas_draws_every_host(two: ServiceProcess, page: Any) -> None:
    """Cluster flat: FLAT hosts with no rack or scalable unit, one group. At zoom 28 and DPR 3 one
    canvas for it would be 67,338 device pixels tall, past Chromium's limit (65,535 a side), where a
    canvas stays blank: the hosts are drawn on several canvases, each within every browser's limits."""
    with offline_page(page, two.url, device_scale_factor=3) as p:  # a phone's DPR, a 4K laptop's at 300 %
        p.add_init_script("localStorage.setItem('graphsvc-zoom', '28')")
        open_view(p, f"{two.url}/ui/#/overview?cluster=flat")
        sec = 'section.group[data-group="unplaced"]'  # the cluster filter shows flat's hosts only
        canvases = p.eval_on_selector_all(
            f"{sec} canvas.cells",
            """cs => cs.map((c) => {
          const last = c._boxes.filter((b) => b.gpu).pop();
          const ratio = c.width / parseFloat(c.style.width);
          const at = (v) => Math.floor((v + 2) * ratio);
          const px = c.getContext('2d').getImageData(at(last.x), at(last.y), 1, 1).data;
          return { w: c.width, h: c.height, cells: Number(c.dataset.cells), alpha: px[3], host: last.host.name };
        })""",
        )
        assert sum(c["cells"] for c in canvases) == int(p.inner_text("#shown").split()[0]) == FLAT * 4
        assert all(c["alpha"] > 0 for c in canvases), canvases  # the last host of each canvas is drawn
        assert all(c["w"] <= 16384 and c["h"] <= 16384 and c["w"] * c["h"] <= 16384 * 1024 for c in canvases)
        # hover and click hit the host under the pointer, in the last canvas too
        last = p.locator(f"{sec} canvas.cells").last
        last.scroll_into_view_if_needed()
        box = last.bounding_box()
        host = canvases[-1]["host"]
        assert host == f"l40s-{FLAT:03d}"
        p.mouse.move(box["x"] + 10, box["y"] + box["height"] - 20)
        assert host in p.inner_text("#tip")
        p.mouse.click(box["x"] + 10, box["y"] + box["height"] - 20)
        p.wait_for_function(f"location.hash === '#/host/{host}'")


# ---- 8, 9: two clusters ------------------------------------------------------------------------------


def test_leaf_links_open_the_fabric_of_their_cluster(two: ServiceProcess, page: Any) -> None:
    with offline_page(page, two.url) as p:
        open_view(p, f"{two.url}/ui/#/fabric")
        for name in CLUSTERS:
            _go(p, f"#/host/{name}-l40s-001")
            link = p.get_attribute('#nics a[href^="#/fabric"]', "href")
            assert f"cluster={name}" in link
            p.click(f'#nics a[href="{link}"]')
            p.wait_for_selector(f'#fabric-title[data-cluster="{name}"]')
            _ready(p)
            p.wait_for_selector(f'svg#fabric g.switch.selected[data-name="{name}-leaf0"]')
            # the search box, an exact switch name: the same cluster's fabric
            _go(p, "#/overview")
            p.fill("#search input[name=q]", f"{name}-leaf0")
            p.press("#search input[name=q]", "Enter")
            p.wait_for_selector(f'#fabric-title[data-cluster="{name}"]')
            _ready(p)
            p.wait_for_selector(f'svg#fabric g.switch.selected[data-name="{name}-leaf0"]')


def test_same_named_scalable_units_stay_apart_by_cluster(two: ServiceProcess, page: Any) -> None:
    with offline_page(page, two.url) as p:
        open_view(p, f"{two.url}/ui/#/overview")
        groups = p.eval_on_selector_all(
            "section.group",
            "ss => ss.map((s) => [s.querySelector('h3').textContent, s.querySelector('canvas').dataset.cells])",
        )
        su1 = {h.split(" ")[0]: n for h, n in groups if "su1" in h}
        assert len(su1) == 2, groups  # one group a cluster, each headed with its cluster
        assert set(su1) == {"west", "east"} and su1["west"] == su1["east"], groups
        _go(p, "#/host/east-l40s-001")
        for key in ("su", "rack"):
            link = p.eval_on_selector(f'#view p a[href*="{key}="]', "a => a.getAttribute('href')")
            assert "cluster=east" in link, link
            _go(p, link)
            assert p.inner_text("#shown") == f"{su1['east']} GPUs match"
            _go(p, "#/host/east-l40s-001")


# ---- 10: a sites link with only q= -----------------------------------------------------------


def test_a_sites_link_with_only_the_request_uses_the_forms_defaults(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        asked: list[dict[str, Any]] = []
        p.on(
            "request",
            lambda r: asked.append(json.loads(r.post_data)) if "compareSites" in (r.post_data or "") else None,
        )
        open_view(p, f"{service.url}/ui/#/sites?q=64")
        form = [p.input_value(s) for s in ("#cw", "#cc", "#cr")]
        assert form == ["6400", "0.2", "H100"]
        assert len(asked) == 1
        profile = asked[0]["variables"]["p"]
        assert (profile["gpuHours"], profile["commShare"], profile["referenceModel"]) == (6400, 0.2, "H100")
        assert "must be above 0" not in p.inner_text("#comparison")


# ---- minor: a 401's reason, a malformed host URL -----------------------------------------------


def test_a_refused_token_says_the_services_reason(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        body = json.dumps({"error": "unknown, expired or revoked token", "detail": "unknown, expired or revoked token"})
        p.route("**/graphql", lambda r: r.fulfill(status=401, content_type="application/json", body=body))
        open_view(p, f"{service.url}/ui/#/fabric")
        text = p.inner_text("#view")
        assert "unknown, expired or revoked token" in text
        assert "401" in text


def test_a_malformed_host_url_says_so(service: ServiceProcess, page: Any) -> None:
    with offline_page(page, service.url) as p:
        open_view(p, f"{service.url}/ui/#/host/100%")
        text = p.inner_text("#view")
        assert "URI malformed" not in text
        assert "100%" in text
