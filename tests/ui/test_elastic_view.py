"""The reservations view's elastic controls in real headless Chromium: resize (grow in place,
the layout verdict, a refusal as a banner), preempt (the plan with its victims, lost work and
deadline, confirm; the pending preemptor and the victims' warning), the phase plan (does the
next phase fit, and where) and failed-GPU replacement (the proposal, the rank -> new GPU map,
take it). Typed failures are shown, never a blank page."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from topo_facts import Health

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.stores import STORES
from tests.ui.conftest import offline_page, store_service
from tests.ui.test_explorer import gql, open_view


def test_resize_from_the_reservations_view(service: ServiceProcess, page: Any) -> None:
    made = gql(service, 'mutation { reserve(input: {holder: "ui-elastic", ttlSeconds: 600, '
                        'request: {gpus: 4, model: "H100"}}) { ... on Reservation { id } } }')["reserve"]  # fmt: skip
    rid = made["id"]
    try:
        open_view(page, f"{service.url}/ui/#/reservations")
        row = f'#reservations tr[data-id="{rid}"]'
        assert page.input_value(f"{row} input.size") == "4"
        page.fill(f"{row} input.size", "8")
        page.click(f"{row} button.resize")
        page.wait_for_function("document.querySelector('#banner').textContent.startsWith('Resized')")
        assert "to 8 GPUs" in page.inner_text("#banner") and "layout kept" in page.inner_text("#banner")
        page.wait_for_selector(f'{row} input.size[value="8"]', timeout=30_000)
        page.fill(f"{row} input.size", "100000")
        page.click(f"{row} button.resize")
        page.wait_for_function("document.querySelector('#banner').classList.contains('error')")
        assert "between 1 and 4096" in page.inner_text("#banner")
    finally:
        gql(service, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": rid})


# ---- preempt, the victims' warning, phases and failed-GPU replacement, on both stores ---------
# A small cluster of its own per store (2 DGX-1 hosts, 16 GPUs): full enough to need preemption,
# and the service runs on the Neo4j server too (every control here writes through the store).


@pytest.fixture(scope="module", params=STORES)
def elastic_service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    with store_service(request, tmp_path_factory, "ui-elastic", _load) as svc:
        yield svc


CLUSTER = "dgx1:hosts=2"


async def _load(url: str) -> None:
    await push_cluster(url, build(CLUSTER))


def _reserve(svc: ServiceProcess, holder: str, gpus: int, **extra: Any) -> str:
    query = (
        "mutation($i: ReserveInput!) { reserve(input: $i) { __typename "
        "... on Reservation { id } ... on Error { message } } }"
    )
    ask = {"holder": holder, "ttlSeconds": 3600, "request": {"gpus": gpus, "gpusPerHost": gpus}, **extra}
    made = gql(svc, query, {"i": ask})
    assert made["reserve"]["__typename"] == "Reservation", made
    rid: str = made["reserve"]["id"]
    return rid


def _release_all(svc: ServiceProcess) -> None:
    rows = gql(svc, "{ reservations(first: 500) { id state } }")["reservations"]
    for r in rows:
        if r["state"] in ("active", "pending"):
            gql(svc, "mutation($id: String!) { release(id: $id) { __typename } }", {"id": r["id"]})


def _banner(p: Any, prefix: str) -> None:
    """Wait for the banner to start with `prefix`; on a time-out, say what it showed instead."""
    try:
        p.wait_for_function(f"document.querySelector('#banner').textContent.startsWith({prefix!r})", timeout=120_000)
    except Exception as err:  # re-raised with what the page showed
        raise AssertionError(f"banner: {p.inner_text('#banner')!r}") from err


def _row(rid: str) -> str:
    return f'#reservations tr[data-id="{rid}"]'


def test_preempt_shows_the_plan_then_warns_the_victims(elastic_service: ServiceProcess, page: Any) -> None:
    svc = elastic_service
    # The costly one first: a checkpoint before a job started counts from its start (a probe's
    # case), so its two hours are the time since it was made, longer than the cheap one's.
    costly = _reserve(svc, "ckpt-old", 8, preemptible=True)
    cheap = _reserve(svc, "ckpt-recent", 8, preemptible=True)
    now = time.time()
    renew = ("mutation($id: String!, $at: Float!, $e: Float) { renew(id: $id, ttlSeconds: 3600, lastCheckpointAt: $at, "
             "checkpointEverySeconds: $e) { __typename } }")  # fmt: skip
    gql(svc, renew, {"id": cheap, "at": now, "e": 60})  # checkpoints every minute: little to lose
    gql(svc, renew, {"id": costly, "at": now - 7200, "e": None})  # two hours since its checkpoint
    try:
        with offline_page(page, svc.url) as p:
            p.set_default_timeout(120_000)  # a loaded machine, a Neo4j JVM: slow, not wrong
            open_view(p, f"{svc.url}/ui/#/reservations")
            # A typed refusal is shown, not a blank page.
            p.fill("#preempt-form input[name=gpus]", "5000")
            p.click("#preempt-form button.plan")
            p.wait_for_selector("#preempt-plan .error")
            assert "between 1 and 4096" in p.inner_text("#preempt-plan")
            assert p.get_attribute("#banner", "class") == "error"
            # More than the cluster has, even preempting: the plan says nothing fits.
            p.fill("#preempt-form input[name=gpus]", "24")
            p.click("#preempt-form button.plan")
            p.wait_for_selector("#preempt-plan .plan-none")
            # The plan: one victim (the one that loses least), its lost work, the deadline.
            p.fill("#preempt-form input[name=holder]", "urgent")
            p.fill("#preempt-form input[name=gpus]", "8")
            p.fill("#preempt-form input[name=priority]", "5")
            p.fill("#preempt-form input[name=grace]", "10m")
            p.click("#preempt-form button.plan")
            p.wait_for_selector("#preempt-plan .plan")
            victims = p.locator("#preempt-plan table.victims tr[data-id]")
            assert victims.count() == 1 and victims.first.get_attribute("data-id") == cheap
            text = p.inner_text("#preempt-plan")
            assert "GPU-h" in text and "grace period ends" in text and "in 10m" in text and "least lost work" in text
            # Confirm: the preemptor is pending with a countdown, the victim carries the warning.
            p.click("#preempt-plan button.preempt")
            _banner(p, "Preemption pending")
            pending = gql(svc, '{ reservations(first: 500, filter: {state: "pending"}) { id graceEndsAt } }')
            pid = pending["reservations"][0]["id"]
            assert pid in p.inner_text("#banner") and cheap in p.inner_text("#banner")
            p.wait_for_selector(f"{_row(pid)} .pending-note .countdown")
            assert p.inner_text(f"{_row(pid)} td.state").startswith("pending")
            warning = p.inner_text(f"{_row(cheap)} .warning")
            assert f"preempted by {pid}" in warning and "checkpoint and release before" in warning
            assert p.locator(f"{_row(costly)} .warning").count() == 0
            # The victim releases early: the GPUs move at once and the preemptor is active.
            p.click(f"{_row(cheap)} button.release")
            p.click(f"{_row(cheap)} button.release")
            p.wait_for_selector(f"{_row(pid)}.active", timeout=30_000)
            assert p.locator(f"{_row(pid)} .pending-note").count() == 0
    finally:
        _release_all(svc)


def test_phase_plan_says_whether_the_next_phase_fits(elastic_service: ServiceProcess, page: Any) -> None:
    svc = elastic_service
    rid = _reserve(svc, "phased", 4)
    try:
        with offline_page(page, svc.url) as p:
            p.set_default_timeout(120_000)  # a loaded machine, a Neo4j JVM: slow, not wrong
            open_view(p, f"{svc.url}/ui/#/reservations")
            p.click(f"{_row(rid)} button.elastic")
            panel = f'tr.panel[data-for="{rid}"]'
            p.wait_for_selector(f"{panel} .rank")
            assert p.locator(f"{panel} .rank").count() == 4 and "0 → " in p.inner_text(f"{panel} .ranks")
            p.fill(f"{panel} input[name=phase]", "warmup")
            p.fill(f"{panel} input[name=plan]", "warmup=4, main=8, huge=64")
            p.click(f"{panel} button.set-phases")
            p.wait_for_selector(f'{panel} .next-phase[data-fits="true"]')
            fit = p.inner_text(f"{panel} .next-phase")
            assert "Next phase main" in fit and "4 → 8 GPUs" in fit and "it would add" in fit
            assert p.locator(f"{panel} .next-phase code").count() == 4
            assert "Phase plan" in p.inner_text("#banner")
            p.fill(f"{panel} input[name=phase]", "main")
            p.click(f"{panel} button.set-phases")
            p.wait_for_selector(f'{panel} .next-phase[data-fits="false"]')
            assert "does not fit" in p.inner_text(f"{panel} .next-phase")
            p.fill(f"{panel} input[name=plan]", "warmup=4, nonsense")
            p.click(f"{panel} button.set-phases")
            p.wait_for_selector(f"{panel} .next-phase p.error")  # not the "does not fit" span
            assert "expected label=request" in p.inner_text(f"{panel} .next-phase")
            assert p.get_attribute("#banner", "class") == "error"
    finally:
        _release_all(svc)


def test_failed_gpu_replacement_is_proposed_then_taken(elastic_service: ServiceProcess, page: Any) -> None:
    svc = elastic_service
    rid = _reserve(svc, "repair", 4)
    try:
        with offline_page(page, svc.url) as p:
            p.set_default_timeout(120_000)  # a loaded machine, a Neo4j JVM: slow, not wrong
            open_view(p, f"{svc.url}/ui/#/reservations")
            p.click(f"{_row(rid)} button.elastic")
            panel = f'tr.panel[data-for="{rid}"]'
            p.wait_for_selector(f"{panel} .rank")
            p.click(f"{panel} button.check-replacement")  # nothing failed: the typed answer, visibly
            p.wait_for_selector(f"{panel} .replacement .error")
            assert "holds a failed or stale GPU" in p.inner_text(f"{panel} .replacement")
            # Rank 1's GPU fails (its host reports it).
            held = gql(svc, "query($id: String!) { elasticState(id: $id) { rankOrder } }", {"id": rid})
            failed = held["elasticState"]["rankOrder"][1]
            _fail_gpu(svc, failed)
            p.click(f"{panel} button.check-replacement")
            p.wait_for_selector(f"{panel} .replacement table.rank-map tr[data-rank]")
            proposal = p.inner_text(f"{panel} .replacement")
            assert proposal.startswith("Proposed: 1 failed GPU") and "layout kept" in proposal
            new_gpu = p.inner_text(f'{panel} .replacement tr[data-rank="1"] code')
            assert new_gpu != failed
            p.click(f"{panel} button.take")
            _banner(p, "Replaced")
            assert f"rank 1 → {new_gpu}" in p.inner_text("#banner")
        after = gql(svc, "query($id: String!) { elasticState(id: $id) { rankOrder } }", {"id": rid})
        assert after["elasticState"]["rankOrder"][1] == new_gpu and failed not in after["elasticState"]["rankOrder"]
    finally:
        _release_all(svc)


def _fail_gpu(svc: ServiceProcess, uuid: str) -> None:
    """The GPU's host reports it failed (newer facts through the public ingest API)."""
    for host in build(CLUSTER).hosts:
        if any(g.uuid == uuid for g in host.gpus):
            gpus = [g.model_copy(update={"health": Health.FAILED}) if g.uuid == uuid else g for g in host.gpus]
            fresh = host.model_copy(update={"gpus": gpus, "collected_at": datetime.now(UTC)})
            resp = httpx.put(f"{svc.url}/v1/hosts/{host.hostname}/facts", content=fresh.model_dump_json(),
                             headers={"content-type": "application/json"}, timeout=60)  # fmt: skip
            assert resp.status_code < 300, resp.text
            return
    raise AssertionError(f"no GPU {uuid}")
