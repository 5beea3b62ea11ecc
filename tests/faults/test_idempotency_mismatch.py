"""#13.11: an idempotency key reused with a different request is a typed mismatch, not the
old reservation returned as if it were the answer."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import KeyUse, Reservation, ReservationService, request_fingerprint
from graphsvc.store.errors import StoreConstraintError
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.queries import with_test_queries

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
                                                                 "first": 10, "now": 0.0})  # fmt: skip
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


def test_spellings_of_one_request_share_a_fingerprint() -> None:
    """What asks for the same GPUs is the same request: the model as model_match reads it (case,
    whitespace), the excluded hosts as a set. What asks for other GPUs is not."""
    base: dict[str, Any] = dict(holder="h", gpus=None, ttl_s=None, priority=0, preemptible=False, labels=[],
                                allow_preemption=False)  # fmt: skip

    def of(text: str, **extra: Any) -> str:
        return request_fingerprint(**base, request=parse_request(text), **extra)

    same = of("2xH100 exclude=a,b")
    for text in ("2xh100 exclude=a,b", '2x"h100 " exclude=b,a', "2xH100 exclude=b,a,a"):
        assert of(text) == same, text
    for text in ("2xH100 exclude=a", "2xA100 exclude=a,b", "2xH100-SXM exclude=a,b", "2xH100 exclude=A,b"):
        assert of(text) != same, text
    # An empty excluded name names no host: GraphQL's ["a", ""] is the text form's `exclude=a,`.
    assert request_fingerprint(**base, request=parse_request("2xH100").with_(exclude_hosts=("a", ""))) == of(
        "2xH100 exclude=a"
    )
    # Bounds hash exactly: `:g` printed 3350 and 3350.001 alike (6 significant digits).
    for text, other in (("mem-bw>=3350", "mem-bw>=3350.001"), ("temp<=85", "temp<=85.0000004"),
                        ("mem>=70", "mem>=70.00000001")):  # fmt: skip
        assert of(f"1xH100 {text}") != of(f"1xH100 {other}"), other
        assert of(f"1xH100 {text}", form="legacy") != of(f"1xH100 {other}", form="legacy"), other
    # The digest stored until stop 46: the request's text as given.
    assert of("2xH100", form="legacy") != of("2xh100", form="legacy")
    assert of("2xh100", form="legacy") == of("2xh100") != of("2xH100", form="legacy")


async def test_a_retry_spelled_otherwise_or_stored_before_the_canonical_digest_is_the_same_reservation(
    loaded: Gateway, client: httpx.AsyncClient
) -> None:
    first = await reserve(client, holder="job-5", request={"gpus": 2, "model": "L40S"}, idempotencyKey="k-5")
    again = await reserve(client, holder="job-5", request={"gpus": 2, "model": "l40s"}, idempotencyKey="k-5")
    assert first["__typename"] == again["__typename"] == "Reservation" and again["id"] == first["id"]
    # A reservation made before stop 46 stored the digest of the text as given: its retry still matches.
    legacy = request_fingerprint(holder="job-5", request=parse_request("2xL40S"), gpus=None, ttl_s=None, priority=0,
                                 preemptible=False, labels=[], allow_preemption=False, form="legacy")  # fmt: skip
    assert await with_test_queries(loaded).write("reservation_request_hash_set", {"key": "k-5", "hash": legacy})
    again = await reserve(client, holder="job-5", request={"gpus": 2, "model": "L40S"}, idempotencyKey="k-5")
    assert again["__typename"] == "Reservation" and again["id"] == first["id"]
    other = await reserve(client, holder="job-5", request={"gpus": 2, "model": "l40s"}, idempotencyKey="k-5")
    assert other["__typename"] == "IdempotencyKeyMismatch"  # the old digest knew the case it was given


async def test_a_retry_with_another_limit_or_the_default_ttl_spelled_out_is_the_same_reservation(
    loaded: Gateway,
) -> None:
    """`limit` changes how many candidates placement lists, not what is held, and no ttl is the
    default's: both were a mismatch (an adversarial trial of a scheduler's retries). A digest
    stored by the last deploy (limit and ttl as given) still matches its retry."""
    svc = ReservationService(loaded)
    first = await svc.reserve(holder="job-8", request=parse_request("2xL40S"), ttl_s=600, idempotency_key="k-8")
    assert isinstance(first, Reservation)
    for request, ttl in ((parse_request("2xL40S limit=5"), 600), (parse_request("2xL40S"), None)):
        again = await svc.reserve(holder="job-8", request=request, ttl_s=ttl, idempotency_key="k-8")
        assert isinstance(again, Reservation) and again.id == first.id, (request, ttl, again)
    longer = await svc.reserve(holder="job-8", request=parse_request("2xL40S"), ttl_s=601, idempotency_key="k-8")
    assert type(longer).__name__ == "IdempotencyKeyMismatch"
    before = request_fingerprint(
        holder="job-8", request=parse_request("2xL40S limit=4"), gpus=None, ttl_s=None, priority=0,
        preemptible=False, labels=[], allow_preemption=False, form="stop46",
    )  # fmt: skip
    assert await with_test_queries(loaded).write("reservation_request_hash_set", {"key": "k-8", "hash": before})
    again = await svc.reserve(holder="job-8", request=parse_request("2xL40S limit=4"), idempotency_key="k-8")
    assert isinstance(again, Reservation) and again.id == first.id


async def test_a_key_that_raced_in_is_compared_with_both_digests(loaded: Gateway, client: httpx.AsyncClient) -> None:
    """The write that loses a race on a key (the unique constraint) answers the winner's
    reservation as a first look at the key does: also when the winner stored the digest of
    before stop 46 (an instance not yet redeployed)."""
    first = await reserve(client, holder="job-6", request={"gpus": 2, "model": "L40S"}, idempotencyKey="k-6")

    def digests(text: str) -> tuple[str, str]:
        """What reserve compares a stored digest with, for this request text."""
        of = partial(request_fingerprint, holder="job-6", request=parse_request(text), gpus=None, ttl_s=None,
                     priority=0, preemptible=False, labels=[], allow_preemption=False)  # fmt: skip
        return of(), of(form="legacy")  # (the stop-46 form, with no limit or ttl given, is the first)

    assert await with_test_queries(loaded).write("reservation_request_hash_set",
                                                 {"key": "k-6", "hash": digests("2xL40S")[1]})  # fmt: skip

    async def raced() -> Reservation | None:
        raise StoreConstraintError("reservations/reserve_gpus", "the key raced in")

    svc = ReservationService(loaded)
    made = await svc.get(first["id"])
    assert made is not None
    props: Any = {"holder": "job-6", "owner": made.owner}
    out = await svc._attempt_with(raced, props, KeyUse("k-6", digests("2xL40S")))
    assert isinstance(out, Reservation) and out.id == first["id"]
    # Spelled otherwise, the old digest cannot tell it is the same request: a mismatch, typed.
    out = await svc._attempt_with(raced, props, KeyUse("k-6", digests("2xl40s")))
    assert type(out).__name__ == "IdempotencyKeyMismatch"


async def test_a_key_replays_only_to_the_caller_that_made_it(loaded: Gateway) -> None:
    """Another caller naming the same holder and key got the reservation back as its own, and
    then could neither renew nor release it (its owner's or an operator's only)."""
    svc = ReservationService(loaded)
    first = await svc.reserve(holder="shared-job", owner="alice", request=parse_request("2"), idempotency_key="k-7")
    assert isinstance(first, Reservation)
    again = await svc.reserve(holder="shared-job", owner="alice", request=parse_request("2"), idempotency_key="k-7")
    assert isinstance(again, Reservation) and again.id == first.id
    other = await svc.reserve(holder="shared-job", owner="bob", request=parse_request("2"), idempotency_key="k-7")
    assert type(other).__name__ == "ValidationError" and "another caller" in other.message  # type: ignore[union-attr]
    assert [r.id for r in await svc.get_many(keys=["k-7"])] == [first.id]
