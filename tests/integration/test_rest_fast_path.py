"""The REST fast path (POST /v1/place, /v1/reservations, /v1/reservations/{id}/release) on both
stores: the same outcomes, roles, ownership and mutation rate limit as the GraphQL mutations."""

from __future__ import annotations

import json

import httpx

from graphsvc.api.app import create_app
from graphsvc.security.auth import Role, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load
from tests.integration.test_mig_slices import LAYOUT, with_mig


def with_tokens(
    gateway: Gateway, roles: dict[str, Role], **limits: float
) -> tuple[httpx.AsyncClient, dict[str, dict[str, str]]]:
    """A client of an app that knows a token per name (a collector's for every host), with these
    limits, and each name's authorization header."""
    entries, tokens = [], {}
    for name, role in roles.items():
        token, entry = new_token(name, role, ["*"] if role is Role.COLLECTOR else [])
        tokens[name] = {"authorization": f"Bearer {token}"}
        entries.append(entry)
    settings = Settings.model_validate({"tokens": json.dumps(entries), **limits})
    app = create_app(settings, gateway=gateway)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://t"), tokens


async def test_place_reserve_release_round_trip(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    placed = (await client.post("/v1/place", json={"request": "8xH100 nvlink=full-mesh"})).json()
    assert placed["candidates"] and len(placed["candidates"][0]["gpus"]) == 8
    body = {"holder": "job-1", "request": "8xH100 nvlink=full-mesh", "idempotencyKey": "k1", "ttlSeconds": 60}
    made = (await client.post("/v1/reservations", json=body)).json()
    assert made["kind"] == "Reservation" and len(made["gpus"]) == 8
    again = (await client.post("/v1/reservations", json=body)).json()
    assert again["id"] == made["id"]  # idempotent, as through GraphQL
    taken = (await client.post("/v1/reservations", json={"holder": "job-2", "gpus": [made["gpus"][0]["uuid"]]})).json()
    assert taken["kind"] == "Conflict" and taken["conflictGpus"] == [made["gpus"][0]["uuid"]]
    # Who holds it, as GraphQL's Conflict.holders says (REST said only which GPUs).
    assert taken["holders"] == [{"gpuUuid": made["gpus"][0]["uuid"], "reservation": made["id"], "holder": "job-1"}]
    released = (await client.post(f"/v1/reservations/{made['id']}/release")).json()
    assert released["kind"] == "Reservation" and released["state"] == "released"
    missing = (await client.post("/v1/reservations/rsv-nope/release")).json()
    assert missing["kind"] == "NotFound"


async def test_typed_answers_for_bad_and_impossible_requests(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=1")
    bad = (await client.post("/v1/reservations", json={"holder": "j", "request": "8xL40S wat=1"})).json()
    assert bad["kind"] == "ValidationError"
    huge = (await client.post("/v1/reservations", json={"holder": "j", "request": "64xL40S"})).json()
    assert huge["kind"] == "Infeasible" and huge["reasons"]
    neither = (await client.post("/v1/reservations", json={"holder": "j"})).json()
    assert neither["kind"] == "ValidationError" and neither["field"] == "input"
    unparsable = await client.post("/v1/place", json={"request": "x"})
    assert unparsable.status_code == 200 and unparsable.json()["infeasible"]


async def test_roles_ownership_and_the_rate_limit(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=2")
    roles = {"sched-1": Role.SCHEDULER, "sched-2": Role.SCHEDULER, "col": Role.COLLECTOR}
    # A token a ~17 h: nothing refills during the test, however slow the machine.
    c, tokens = with_tokens(gateway, roles, mutation_rate_per_minute=0.001, mutation_burst=2)
    async with c:
        anonymous = await c.post("/v1/reservations", json={"holder": "j", "request": "1xL40S"})
        assert anonymous.status_code == 401
        collector = await c.post("/v1/reservations", json={"holder": "j", "request": "1xL40S"}, headers=tokens["col"])
        assert collector.status_code == 403
        made = await c.post("/v1/reservations", json={"holder": "j", "request": "1xL40S"}, headers=tokens["sched-1"])
        assert made.json()["kind"] == "Reservation"
        other = await c.post(f"/v1/reservations/{made.json()['id']}/release", headers=tokens["sched-2"])
        assert other.status_code == 403
        renew = await c.post(f"/v1/reservations/{made.json()['id']}/renew", json={}, headers=tokens["sched-2"])
        assert renew.status_code == 403  # renewing, like releasing, is its owner's (or an operator's)
        read = await c.get(f"/v1/reservations/{made.json()['id']}", headers=tokens["sched-2"])
        assert read.json()["kind"] == "Reservation"  # reading is any scheduler's, as GraphQL's reservation
        assert (await c.get(f"/v1/reservations/{made.json()['id']}", headers=tokens["col"])).status_code == 403
        mine = await c.post(f"/v1/reservations/{made.json()['id']}/release", headers=tokens["sched-1"])
        assert mine.json()["kind"] == "Reservation"
        limited = await c.post("/v1/reservations", json={"holder": "j", "request": "1xL40S"}, headers=tokens["sched-1"])
        assert limited.status_code == 429  # a burst of 2: reserve and release spent it


async def test_mig_requests_are_answered_in_slices(client: httpx.AsyncClient, gateway: Gateway) -> None:
    c = SyntheticCluster("default")
    add_spines(c, add_superpod_h100(c, 1, seed=4), prefix="spine", sus=1)
    c.hosts = [with_mig(h, LAYOUT[i]) for i, h in enumerate(c.hosts[:2])]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in {h.hostname for h in c.hosts}]
    await load(gateway, c)
    placed = (await client.post("/v1/place", json={"request": "2x 3g.40gb"})).json()
    assert placed["candidates"] == [] and placed["infeasible"] == []
    best = placed["migCandidates"][0]
    assert best["scope"] == "gpu" and [s["profile"] for s in best["slices"]] == ["3g.40gb", "3g.40gb"]
    assert len({s["gpu"] for s in best["slices"]}) == 1 and best["slices"][0]["uuid"].startswith("MIG-")
    made = (await client.post("/v1/reservations", json={"holder": "nb-1", "request": "2x 3g.40gb"})).json()
    assert made["kind"] == "Reservation" and made["gpus"] == []
    assert [(s["profile"], s["held"]) for s in made["migSlices"]] == [("3g.40gb", True)] * 2
    assert made["lostSlices"] == []
    released = (await client.post(f"/v1/reservations/{made['id']}/release")).json()
    assert released["state"] == "released"
    whole = (await client.post("/v1/reservations", json={"holder": "j", "gpus": [best["slices"][0]["gpu"]]})).json()
    assert whole["kind"] == "ValidationError"  # a MIG-enabled GPU is never handed out whole


async def test_unknown_fields_wrong_types_and_odd_numbers_are_refused_not_guessed(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """A body field the API does not know was dropped: `idempotency_key` for `idempotencyKey`
    made each retry a new reservation. Types were coerced where GraphQL refuses them. Non-finite
    numbers in the text form were a 500 with a traceback, through REST and GraphQL."""
    await load(gateway, "l40s:hosts=1")
    for body in (
        {"holder": "j", "request": "1xL40S", "idempotency_key": "retry-1"},
        {"holder": "j", "request": "1xL40S", "ttlSeconds": "30"},
        {"holder": "j", "request": "1xL40S", "preemptible": "yes"},
        {"holder": "j", "request": "1xL40S", "priority": True},
    ):
        refused = await client.post("/v1/reservations", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert set(body) - {"holder", "request"} <= {p["field"].rsplit(".", 1)[-1] for p in refused.json()["fields"]}
    assert (await client.post("/v1/place", json={"request": "1", "limit": 3})).status_code == 422
    whole = {"holder": "j", "request": "1xL40S", "ttlSeconds": 600.0, "priority": 1e2}  # GraphQL's Int takes these
    taken = (await client.post("/v1/reservations", json=whole)).json()
    assert taken["kind"] == "Reservation", taken
    assert (await client.post("/v1/reservations", json={**whole, "ttlSeconds": 30.5})).status_code == 422
    for text in ("1xL40S mem>=inf", "1xL40S ib-hops<=nan", "1xL40S mem>=1e308", "1xL40S temp<=nan"):
        placed = await client.post("/v1/place", json={"request": text})
        made = await client.post("/v1/reservations", json={"holder": "j", "request": text})
        assert placed.status_code == made.status_code == 200, (text, placed.text, made.text)
        assert made.json()["kind"] == "ValidationError", made.text
        query = "query($t: String!) { placementText(text: $t) { candidates { score } infeasible { message } } }"
        answer = (await client.post("/graphql", json={"query": query, "variables": {"t": text}})).json()
        assert "errors" not in answer and answer["data"]["placementText"]["infeasible"], answer
        assert answer["data"]["placementText"]["infeasible"][0]["message"] == placed.json()["infeasible"][0]["message"]


async def test_place_and_reserve_spend_the_tokens_query_budget_as_graphql_does(gateway: Gateway) -> None:
    """The fast path charged no query cost: a token could ask for 4,096-GPU placements without
    end (GraphQL prices one at 514 units). It now spends the same per-token budget as GraphQL."""
    await load(gateway, "l40s:hosts=1")
    roles = {"sched-1": Role.SCHEDULER, "sched-2": Role.SCHEDULER}
    # A budget of 1,000 units that refills ~17 h per unit: nothing refills during the test.
    c, tokens = with_tokens(gateway, roles, graphql_cost_per_minute=0.001, graphql_cost_burst=1000)
    async with c:
        first = await c.post("/v1/place", json={"request": "4096xL40S"}, headers=tokens["sched-1"])
        assert first.status_code == 200 and first.json()["infeasible"]  # 514 of 1,000 spent
        second = await c.post("/v1/place", json={"request": "4096xL40S"}, headers=tokens["sched-1"])
        assert second.status_code == 429
        assert "query budget exceeded" in second.json()["detail"] and int(second.headers["retry-after"]) >= 1
        huge = {"holder": "j", "request": "4096xL40S"}
        reserve = await c.post("/v1/reservations", json=huge, headers=tokens["sched-1"])
        assert reserve.status_code == 429
        query = {"query": '{ placementText(text: "4096xL40S") { candidates { score } } }'}
        graphql = (await c.post("/graphql", json=query, headers=tokens["sched-1"])).json()
        assert graphql["errors"][0]["extensions"]["code"] == "QUERY_BUDGET_EXCEEDED"  # one budget for both
        small = await c.post("/v1/place", json={"request": "1xL40S"}, headers=tokens["sched-1"])
        assert small.status_code == 200 and small.json()["candidates"]  # 3 units: what is left still buys it
        other = await c.post("/v1/place", json={"request": "4096xL40S"}, headers=tokens["sched-2"])
        assert other.status_code == 200  # each token its own budget


async def test_reading_a_reservation_spends_the_budget_as_graphql_does(gateway: Gateway) -> None:
    """GET /v1/reservations/{id} charged nothing and GraphQL's `reservation` 1, though each reads
    every GPU the reservation holds (a 4,096-GPU job's read: 57-71 ms of store time); both now
    cost what elasticState, the same read, costs (graphql/cost.py, RESERVATION_READ)."""
    await load(gateway, "l40s:hosts=1")
    # 150 units that refill ~17 h per unit: a reserve (3) and two reads (70 each) fit, a third does not.
    c, tokens = with_tokens(
        gateway, {"sched": Role.SCHEDULER}, graphql_cost_per_minute=0.001, graphql_cost_burst=150, graphql_max_cost=150
    )
    async with c:
        made = await c.post("/v1/reservations", json={"holder": "j", "request": "1xL40S"}, headers=tokens["sched"])
        assert made.status_code == 200 and made.json()["kind"] == "Reservation", made.text
        rid = made.json()["id"]
        for _ in range(2):
            read = await c.get(f"/v1/reservations/{rid}", headers=tokens["sched"])
            assert read.status_code == 200 and read.json()["id"] == rid
        spent = await c.get(f"/v1/reservations/{rid}", headers=tokens["sched"])
        assert spent.status_code == 429 and "a call costing 70" in spent.json()["detail"]
        query = {"query": "query($id: String!) { reservation(id: $id) { id } }", "variables": {"id": rid}}
        graphql = (await c.post("/graphql", json=query, headers=tokens["sched"])).json()
        assert graphql["errors"][0]["extensions"]["code"] == "QUERY_BUDGET_EXCEEDED"


async def test_a_call_costing_more_than_any_may_is_refused_for_good(gateway: Gateway) -> None:
    """A budget smaller than a call's cost would never let it run: not a 429 to retry forever, but
    what GraphQL answers (QUERY_TOO_EXPENSIVE), a 400 (a review's case)."""
    await load(gateway, "l40s:hosts=1")
    c, tokens = with_tokens(gateway, {"sched": Role.SCHEDULER}, graphql_max_cost=100, graphql_cost_burst=100)
    async with c:
        for _ in range(2):
            refused = await c.post("/v1/place", json={"request": "1000xL40S"}, headers=tokens["sched"])
            assert refused.status_code == 400 and "too expensive" in refused.json()["detail"]
        fine = await c.post("/v1/place", json={"request": "1xL40S"}, headers=tokens["sched"])
        assert fine.status_code == 200 and fine.json()["candidates"]
