"""The elastic mutations through GraphQL, as a job launcher sends them (both stores)."""

from __future__ import annotations

import time

import httpx

from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load
from tests.integration.test_reservations import gql
from tests.stores import adhoc

RESERVE = """mutation($h: String!, $n: Int!, $p: Int!, $pre: Boolean!) {
  reserve(input: {request: {gpus: $n, model: "H100"}, holder: $h, ttlSeconds: 3600, priority: $p,
                  preemptible: $pre, labels: ["replace=auto"]}) {
    __typename ... on Reservation { id gpus { uuid } } } }"""


async def test_resize_renew_with_progress_phases_and_preempt(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    fresh = adhoc("fresh", "MATCH (h:Host) SET h.received_at = $now")
    await gateway.backend.run(fresh, {"now": time.time()}, write=True, timeout_s=60)  # none stale
    made = (await gql(client, RESERVE, {"h": "trainer", "n": 8, "p": 0, "pre": True}))["reserve"]
    assert made["__typename"] == "Reservation"
    rid = made["id"]
    grown = (
        await gql(
            client,
            """mutation($id: String!) { resize(id: $id, gpus: 16) { __typename
      ... on Resized { layoutKept added rankOrder reservation { gpus { uuid } } } } }""",
            {"id": rid},
        )
    )["resize"]
    assert grown["__typename"] == "Resized" and grown["layoutKept"] and len(grown["added"]) == 8
    assert len(grown["rankOrder"]) == 16
    shrunk = (
        await gql(
            client,
            """mutation($id: String!) { resize(id: $id, removeRanks: [15, 14]) { __typename
      ... on Resized { removed } } }""",
            {"id": rid},
        )
    )["resize"]
    assert shrunk["__typename"] == "Resized" and sorted(shrunk["removed"]) == sorted(grown["rankOrder"][14:])
    bad = (
        await gql(
            client,
            """mutation($id: String!) { resize(id: $id, gpus: 0) { __typename
      ... on ValidationError { field } } }""",
            {"id": rid},
        )
    )["resize"]
    assert bad == {"__typename": "ValidationError", "field": "gpus"}
    renewed = (await gql(client, """mutation($id: String!, $t: Float!) {
      renew(id: $id, ttlSeconds: 3600, lastCheckpointAt: $t, checkpointEverySeconds: 600) { __typename } }""",
                         {"id": rid, "t": time.time() - 30}))["renew"]  # fmt: skip
    assert renewed["__typename"] == "Reservation"
    phased = await gql(
        client,
        """mutation($id: String!) {
      setPhases(id: $id, phase: "a", phases: ["a=14xH100", "b=24xH100"]) { __typename } }""",
        {"id": rid},
    )
    assert phased["setPhases"]["__typename"] == "PhasesSet"
    fit = (
        await gql(
            client,
            """query($id: String!) { nextPhase(id: $id) { __typename
      ... on PhaseFit { nextPhase fits gpusNext add layoutKept } } }""",
            {"id": rid},
        )
    )["nextPhase"]
    assert fit["nextPhase"] == "b" and fit["fits"] and fit["gpusNext"] == 24 and len(fit["add"]) == 10
    mine = (await gql(client, """query($id: String!) { reservation(id: $id) { hosts { name } } }""",
                      {"id": rid}))["reservation"]["hosts"]  # fmt: skip
    others = [h.hostname for h in build("superpod-h100:sus=1").hosts if h.hostname not in {m["name"] for m in mine}]
    rows = await gateway.read("placement_host_gpus", {"hosts": others})
    rest = [r["uuid"] for r in rows if (r.get("health") or "ok") not in ("failed", "degraded")]
    blocker = (await gql(client, """mutation($g: [String!]!) { reserve(input: {gpus: $g, holder: "blocker",
      ttlSeconds: 3600}) { __typename } }""", {"g": rest}))["reserve"]  # fmt: skip
    assert blocker["__typename"] == "Reservation"
    every = 16  # only the job's two hosts can give 16 now
    plan = (
        await gql(
            client,
            """query($n: Int!) { preemptionPlan(request: {gpus: $n, model: "H100"}, priority: 5) {
      ... on PreemptionPlan { feasible reason lostGpuHours victims { reservation lostGpuHours } } } }""",
            {"n": every},
        )
    )["preemptionPlan"]
    assert plan["feasible"] and plan["victims"][0]["reservation"] == rid, plan
    assert 0 < plan["lostGpuHours"] < 14 * 600 / 3600 + 14 * 300 / 3600 + 0.1  # since the checkpoint + restart
    pending = (await gql(client, """mutation($n: Int!) { preempt(input: {holder: "urgent",
      request: {gpus: $n, model: "H100"}, priority: 5, graceSeconds: 60}) { __typename
      ... on PendingPreemption { graceEndsAt victims { reservation } reservation { id state } } } }""",
                         {"n": every}))["preempt"]  # fmt: skip
    assert pending["__typename"] == "PendingPreemption" and pending["reservation"]["state"] == "pending"
    assert [v["reservation"] for v in pending["victims"]] == [rid]
    await gql(client, """mutation($id: String!) { release(id: $id) { __typename } }""", {"id": rid})
    after = (await gql(client, """query($id: String!) { reservation(id: $id) { state gpus { uuid } } }""",
                       {"id": pending["reservation"]["id"]}))["reservation"]  # fmt: skip
    assert after["state"] == "active" and len(after["gpus"]) == every  # moved as soon as the victim released
