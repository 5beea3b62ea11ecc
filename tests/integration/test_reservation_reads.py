"""Reading a reservation as its holder sees it, on both stores: over GraphQL and REST, with its
GPUs' live readings, and `expired` from the moment its lease ran out (before the reaper runs)."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from graphsvc.read.browse import Browse, LocatedGpu
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import Clock, gql

GPUS = "gpus { uuid state health memoryMiB temperatureC scaleUpDomain host { name } }"


def counting(app: FastAPI) -> list[list[str]]:
    """Record each read of GPUs by uuid the GraphQL layer makes."""
    browse: Browse = app.state.services.browse
    calls: list[list[str]] = []
    real = browse.gpus_by_uuid

    async def spy(uuids: list[str]) -> list[LocatedGpu]:
        calls.append(list(uuids))
        return await real(uuids)

    browse.gpus_by_uuid = spy  # type: ignore[method-assign]
    return calls


async def test_a_reservations_gpus_carry_their_live_readings(
    app: FastAPI, client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """`Reservation.gpus { health }` was always null: the reservation's read carries only which GPUs."""
    await load(gateway, "superpod-h100:sus=1")
    calls = counting(app)
    made = await gql(
        client,
        'mutation { reserve(input: {holder: "j", request: {gpus: 8, model: "H100", nvlink: FULL_MESH}}) '
        f"{{ ... on Reservation {{ id {GPUS} }} }} }}",
    )
    rid = made["reserve"]["id"]
    gpus: list[dict[str, Any]] = made["reserve"]["gpus"]
    assert len(gpus) == 8 and len(calls) == 1 and sorted(calls[0]) == sorted(g["uuid"] for g in gpus)
    for g in gpus:
        assert g["state"] == "reserved" and g["health"] and g["memoryMiB"] and g["scaleUpDomain"], g
    # Two reservations in one answer: one read of their GPUs, not one per reservation.
    await gql(client, 'mutation { reserve(input: {holder: "k", request: {gpus: 2, model: "H100"}}) { __typename } }')
    calls.clear()
    both = await gql(client, '{ reservations(filter: {state: "active"}) { gpus { ... on GPU { health } } } }')
    assert len(calls) == 1 and len(calls[0]) == 10
    assert [len(r["gpus"]) for r in both["reservations"]] in ([8, 2], [2, 8])
    assert all(g["health"] for r in both["reservations"] for g in r["gpus"])
    # Not asked for, not read: a scheduler reading which GPUs pays no second query.
    calls.clear()
    plain = await gql(client, f'{{ reservation(id: "{rid}") {{ gpus {{ uuid index state model vendor }} }} }}')
    assert len(plain["reservation"]["gpus"]) == 8 and calls == []
    # Once ended, the GPUs' state is no longer this reservation's: null, readings still there.
    await gql(client, f'mutation {{ release(id: "{rid}") {{ ... on Reservation {{ id }} }} }}')
    ended = await gql(client, f'{{ reservation(id: "{rid}") {{ state {GPUS} }} }}')
    assert ended["reservation"]["state"] == "released"
    assert all(g["state"] is None and g["health"] for g in ended["reservation"]["gpus"])


async def test_a_lapsed_lease_reads_expired_before_the_reaper_runs(
    app: FastAPI, client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """It read `active` (GPUs reserved) until the reaper's next run, while a renew already
    answered LeaseExpired and a reserve could take its GPUs."""
    await load(gateway, "l40s:hosts=1")
    clock = Clock()
    app.state.reservations.clock = clock
    made = (await client.post("/v1/reservations", json={"holder": "j", "request": "2xL40S", "ttlSeconds": 10})).json()
    live = (await client.post("/v1/reservations", json={"holder": "k", "request": "2xL40S", "ttlSeconds": 60})).json()
    assert made["kind"] == live["kind"] == "Reservation"
    rid = made["id"]
    seen = (await client.get(f"/v1/reservations/{rid}")).json()
    assert seen["state"] == "active" and seen["endedAt"] is None
    page = await gql(client, '{ reservations(filter: {state: "active"}) { id } }')
    assert {r["id"] for r in page["reservations"]} == {rid, live["id"]}

    clock.now += 11  # lapsed; no reaper has run, so the store still says active
    seen = (await client.get(f"/v1/reservations/{rid}")).json()
    assert seen["kind"] == "Reservation" and seen["state"] == "expired" and seen["endedAt"] == made["expiresAt"]
    one = await gql(client, f'{{ reservation(id: "{rid}") {{ state endedAt gpus {{ state }} }} }}')
    assert one["reservation"]["state"] == "expired" and one["reservation"]["endedAt"] == made["expiresAt"]
    assert [g["state"] for g in one["reservation"]["gpus"]] == [None, None]
    expired = await gql(client, '{ reservations(filter: {state: "expired"}) { id state } }')
    assert expired["reservations"] == [{"id": rid, "state": "expired"}]
    active = await gql(client, '{ reservations(filter: {state: "active"}) { id } }')
    assert active["reservations"] == [{"id": live["id"]}]
    # What a renew says agrees with what the read said.
    late = (await client.post(f"/v1/reservations/{rid}/renew", json={"ttlSeconds": 30})).json()
    assert late["kind"] == "LeaseExpired" and late["id"] == rid and late["endedAt"] == made["expiresAt"]


async def test_rest_renew_and_read(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """A scheduler on the REST fast path renews and reads without GraphQL."""
    await load(gateway, "l40s:hosts=1")
    made = (await client.post("/v1/reservations", json={"holder": "j", "request": "1xL40S", "ttlSeconds": 30})).json()
    renewed = (await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttlSeconds": 600})).json()
    assert renewed["kind"] == "Reservation" and renewed["expiresAt"] > made["expiresAt"]
    assert renewed["gpus"] == made["gpus"]
    default = (await client.post(f"/v1/reservations/{made['id']}/renew", json={})).json()
    assert default["kind"] == "Reservation"
    read = (await client.get(f"/v1/reservations/{made['id']}")).json()
    assert read["state"] == "active" and read["expiresAt"] == default["expiresAt"] and read["gpus"] == made["gpus"]
    bad = (await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttlSeconds": 0})).json()
    assert bad["kind"] == "ValidationError" and bad["field"] == "ttlSeconds"
    unknown = await client.post(f"/v1/reservations/{made['id']}/renew", json={"ttl": 5})
    assert unknown.status_code == 422 and "ttl" in unknown.text  # a field it does not know is refused, not dropped
    assert (await client.post("/v1/reservations/rsv-nope/renew", json={})).json()["kind"] == "NotFound"
    missing = (await client.get("/v1/reservations/rsv-nope")).json()
    assert missing == {**missing, "kind": "NotFound", "id": "rsv-nope"}
    released = (await client.post(f"/v1/reservations/{made['id']}/release")).json()
    assert released["state"] == "released" and released["endedAt"] is not None
    after = (await client.post(f"/v1/reservations/{made['id']}/renew", json={})).json()
    assert after["kind"] == "LeaseExpired" and "released" in after["message"]
