"""#13.11: an idempotency key reused with a different request is a typed mismatch, not the
old reservation returned as if it were the answer."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.reservations.service import request_fingerprint
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

RESERVE = """mutation($input: ReserveInput!) { reserve(input: $input) { __typename
  ... on Reservation { id gpus { uuid } }
  ... on IdempotencyKeyMismatch { key reservation message }
  ... on ValidationError { field message } } }"""


async def reserve(client: httpx.AsyncClient, **input_: Any) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": RESERVE, "variables": {"input": input_}})
    body = resp.json()
    assert "errors" not in body, body
    out: dict[str, Any] = body["data"]["reserve"]
    return out


@pytest.fixture
async def loaded(gateway: Gateway) -> Gateway:
    await load(gateway, "l40s:hosts=2")
    return gateway


async def test_same_key_same_request_is_the_same_reservation(loaded: Gateway, client: httpx.AsyncClient) -> None:
    first = await reserve(client, holder="job-1", request={"gpus": 2}, idempotencyKey="k-1", ttlSeconds=60)
    again = await reserve(client, holder="job-1", request={"gpus": 2}, idempotencyKey="k-1", ttlSeconds=60)
    assert first["__typename"] == again["__typename"] == "Reservation"
    assert again["id"] == first["id"]


@pytest.mark.parametrize(
    "change",
    [
        {"request": {"gpus": 4}},
        {"request": {"gpus": 2, "model": "L40S"}},
        {"ttlSeconds": 120},
        {"priority": 5},
        {"labels": ["team=x"]},
    ],
    ids=["gpus", "model", "ttl", "priority", "labels"],
)
async def test_same_key_different_request_is_a_mismatch(
    loaded: Gateway, client: httpx.AsyncClient, change: dict[str, Any]
) -> None:
    base: dict[str, Any] = {"holder": "job-1", "request": {"gpus": 2}, "idempotencyKey": "k-2", "ttlSeconds": 60}
    first = await reserve(client, **base)
    assert first["__typename"] == "Reservation"
    out = await reserve(client, **{**base, **change})
    assert out["__typename"] == "IdempotencyKeyMismatch", out
    assert out["key"] == "k-2" and out["reservation"] == first["id"]
    assert "different request" in out["message"]
    # Nothing changed: the first reservation holds what it held, and no second one exists.
    rows = await loaded.read("reservations/reservations_page", {"holder": "job-1", "state": "", "after": "",
                                                                 "first": 10})  # fmt: skip
    assert [r["id"] for r in rows] == [first["id"]]


async def test_explicit_gpus_are_compared_as_a_set(loaded: Gateway, client: httpx.AsyncClient) -> None:
    page = (await client.post("/graphql", json={"query": "{ gpus(first: 2) { nodes { uuid } } }"})).json()
    uuids = [g["uuid"] for g in page["data"]["gpus"]["nodes"]]
    assert len(uuids) == 2
    first = await reserve(client, holder="job-3", gpus=uuids, idempotencyKey="k-3")
    again = await reserve(client, holder="job-3", gpus=list(reversed(uuids)), idempotencyKey="k-3")
    assert again["__typename"] == "Reservation" and again["id"] == first["id"]
    other = await reserve(client, holder="job-3", gpus=uuids[:1], idempotencyKey="k-3")
    assert other["__typename"] == "IdempotencyKeyMismatch"


def test_fingerprint_table() -> None:
    base: dict[str, Any] = dict(holder="h", request=None, gpus=["b", "a"], ttl_s=None, priority=0,
                                preemptible=False, labels=["y", "x"], allow_preemption=False)  # fmt: skip
    same = request_fingerprint(**base)
    assert request_fingerprint(**{**base, "gpus": ["a", "b"], "labels": ["x", "y"]}) == same
    for change in ({"holder": "g"}, {"ttl_s": 5}, {"priority": 1}, {"preemptible": True}, {"allow_preemption": True}):
        assert request_fingerprint(**{**base, **change}) != same, change
