"""The Python lease holder of a job that changes, against the real service (both stores)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from graphsvc.cli import push_cluster
from graphsvc.client import GraphsvcClient, PreemptionNotice, ResizeNotice, elastic_hold
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.stores import STORES, service_store_env

PROFILE = "superpod-h100:sus=1"
PREEMPT = """mutation($exclude: [String!]!) { preempt(input: {holder: "urgent", priority: 9, graceSeconds: 600,
  request: {gpus: 8, model: "H100", gpusPerHost: 8, excludeHosts: $exclude}}) {
  __typename ... on PendingPreemption { reservation { id } victims { reservation } } } }"""
STATE = "query($id: String!) { reservation(id: $id) { state gpus { uuid } } }"


@pytest.fixture(scope="module", params=STORES)
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    # The cluster is pushed once for the module's tests: its facts must not go stale before the
    # last of them runs, however loaded the machine (the default is 300 s).
    env = {**service_store_env(request.param, request), "GRAPHSVC_STALE_AFTER_S": "86400"}
    svc = ServiceProcess(tmp_path_factory.mktemp("svc") / "data", env=env)
    svc.start()
    asyncio.run(push_cluster(svc.url, build(PROFILE)))
    yield svc
    svc.stop()


def test_lease_holder_resizes_checkpoints_and_yields_to_a_preemption(service: ServiceProcess) -> None:
    notices: list[PreemptionNotice] = []
    resizes: list[ResizeNotice] = []
    # Start on a board whose 8 GPUs are all healthy, so that growing to 8 stays on it (best fit
    # would otherwise pick a board with a failed GPU, and the grow would spill onto a second host).
    partial = [h.hostname for h in build(PROFILE).hosts if any(g.health.value != "ok" for g in h.gpus)]
    request = "4xH100" + (f" exclude={','.join(partial)}" if partial else "")
    with GraphsvcClient(service.url) as gs:
        with elastic_hold(
            gs, request, holder="trainer", ttl_s=600, renew_every_s=300, preemptible=True,
            on_preempt=notices.append, on_resize=resizes.append,
        ) as lease:  # fmt: skip
            lease.checkpointed(every_s=900)
            lease.renew(600)  # the checkpoint goes with the renewal
            grown = lease.resize(8)
            assert grown.layout_kept and len(lease.rank_order) == 8 and resizes == []  # its own resize: no notice
            host = {g.host for g in lease.reservation.gpus}.pop()
            others = [h.hostname for h in build(PROFILE).hosts if h.hostname != host]
            body = {"query": PREEMPT, "variables": {"exclude": others}}
            out = httpx.post(f"{service.url}/graphql", json=body, timeout=120)  # not httpx's 5 s: a loaded Neo4j
            pending = out.json()["data"]["preempt"]
            assert pending["__typename"] == "PendingPreemption", pending
            assert [v["reservation"] for v in pending["victims"]] == [lease.id]
            lease.poll()
            assert len(notices) == 1 and notices[0].by == pending["reservation"]["id"]
            lease.checkpointed()  # the job saves its state, then leaves the block: released
        variables = {"id": pending["reservation"]["id"]}
        taken = httpx.post(f"{service.url}/graphql", json={"query": STATE, "variables": variables}, timeout=120)
        got = taken.json()["data"]["reservation"]
        assert got["state"] == "active" and len(got["gpus"]) == 8  # moved on release, not at the deadline


def test_cli_resize_next_phase_replace_and_preempt(service: ServiceProcess, capsys: pytest.CaptureFixture[str]) -> None:
    from graphsvc.cli import main

    with GraphsvcClient(service.url) as gs:
        r = gs.reserve("4xH100", holder="cli-job", ttl_s=600)
        try:
            assert main(["resize", r.id, "--gpus", "8", "--server", service.url]) == 0
            assert "layout kept" in capsys.readouterr().out
            assert main(["resize", r.id, "--remove-ranks", "7", "-o", "json", "--server", service.url]) == 0
            assert '"Resized"' in capsys.readouterr().out
            assert main(["next-phase", r.id, "--server", service.url]) == 0
            assert "no later phase" in capsys.readouterr().out
            assert main(["replace", r.id, "--propose", "--server", service.url]) == 2  # nothing failed
            capsys.readouterr()
            code = main(["preempt", "4096xH100", "--holder", "x", "--priority", "5", "--server", service.url])
            assert code == 2 and "infeasible" in capsys.readouterr().out
        finally:
            gs.release(r.id)
