"""The candidate statements' model prefilter decided by list membership for known models.

`prefilter_params` hands the statements the known model names the prefilter accepts; a model
the list does not know (it is at most a minute old) is still tested by substring in the store.
Whatever the list knows, the statements must find the same units as the substring test alone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from topo_facts.gpu_models import model_match

from graphsvc.placement.engine import PlacementEngine, prefilter_params
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import default_registry
from graphsvc.store.schema import TIE_BUCKETS, tie_bucket
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load
from tests.helpers import DEFAULT_GPU_FILTERS

COMMON: dict[str, Any] = {
    "exclude": [],
    "now": time.time(),
    "stale_before": 0.0,
    "virtual_free": [],
    "blocks": 3,
    "host_top": 128,
    "domain_top": 576,
    "skip": 0,
    "tie_buckets": TIE_BUCKETS,
}
# The leaf statement reads no free blocks (the engine reads them beside it): their parameters left out.
LEAVES_COMMON = {k: v for k, v in COMMON.items() if k in default_registry()["placement_leaves_fit"].parameters}
STATEMENTS: dict[str, dict[str, Any]] = {
    "placement_hosts_fit": {**COMMON, "filters": DEFAULT_GPU_FILTERS, "first_size": 1, "last_size": 128, "step": 1,
                            "mode": "none", "n": 1, "limit": 50, "probe": 50},
    "placement_domains_fit": {**COMMON, "filters": DEFAULT_GPU_FILTERS, "first_size": 1, "last_size": 576, "step": 1,
                              "n": 1, "limit": 50, "probe": 50},
    "placement_leaves_fit": {**LEAVES_COMMON, "filters": DEFAULT_GPU_FILTERS, "ready": False, "min_free": 1, "gpus": 1,
                             "per_host": 0, "host_min": 1, "need": 1, "extra": 0, "fullest_first": True,
                             "fullest_leaves": False, "even": False, "limit": 50},
}  # fmt: skip


def units(row: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted((u["unit"], u["free"], tuple(map(tuple, u.get("members") or []))) for u in row["found"] if u)


async def test_known_models_find_what_the_substring_test_finds(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    await load(gateway, "a100-pcie")
    await load(gateway, "l40s")
    known = sorted(str(r["model"]) for r in await gateway.read("placement_gpu_models", {}) if r.get("model"))
    assert len(known) == 3
    for name, base in STATEMENTS.items():
        for model in ("", "h100", "a100", "l40", "nvidia", "b200"):
            answers = []
            for listed in (known, known[:1], []):  # the whole list, a stale one, none
                rows = await gateway.read(name, {**base, "model": model, **prefilter_params(model, listed)})
                answers.append(units(rows[0]) if rows else [])
            assert answers[0] == answers[1] == answers[2], (name, model)
            if model in ("h100", "nvidia"):
                assert answers[0], (name, model)


async def test_domain_pages_follow_the_tie_order_across_buckets(gateway: Gateway) -> None:
    """placement_domains_fit reads a page of tied domains bucket by bucket (three lazy passes):
    paged with SKIP, the pages are the domains in best-fit order, ties by (tie_bucket, uuid),
    each once, whatever bucket the page's edge falls in."""
    await load(gateway, "superpod-h100:sus=2")  # 64 boards, most with all 8 free: ties
    base = {**STATEMENTS["placement_domains_fit"], "model": "h100", **prefilter_params("h100", [])}
    base |= {"first_size": 8, "last_size": 1, "step": -1, "n": 1}
    rows = await gateway.read("placement_domains_fit", {**base, "skip": 0, "limit": 500, "probe": 500})

    def in_tie_order(units: list[dict[str, Any]]) -> list[str]:  # `found` is unordered (an aggregation)
        return [u["unit"] for u in sorted(units, key=lambda u: (-u["free"], tie_bucket(u["unit"]), u["unit"]))]

    everything = in_tie_order(rows[0]["found"])
    scanned = rows[0]["scanned"]
    assert scanned >= 60 and len(everything) >= 48  # a domain with nothing free is not read
    assert len({tie_bucket(u) for u in everything}) > 8  # the pages below cross many buckets
    for size in (1, 3, 7):
        paged: list[str] = []
        for skip in range(0, scanned, size):
            params = {**base, "skip": skip, "limit": size, "probe": skip + size}
            paged += in_tie_order((await gateway.read("placement_domains_fit", params))[0]["found"])
        assert paged == everything, size


@pytest.mark.parametrize(
    ("stored", "requested"),
    [("Acme amd X1", "Acme X1"), ("ACME  X1", "acme x1"), ("AMD MI250", "MI250")],
)
async def test_a_model_spelt_with_vendor_words_or_odd_spaces_is_found_and_reserved(
    gateway: Gateway, stored: str, requested: str
) -> None:
    """Every candidate statement drops a unit whose model text does not contain the request's
    prefilter, before Python's exact match. A prefilter that is not inside a text the match
    accepts loses those GPUs for good (stop 44: `Acme amd X1` for `Acme X1`); the reservation's
    one-host fast path uses the same prefilter."""
    c = build("a100-pcie:hosts=2")
    odd = c.hosts[1].model_copy(update={"gpus": [g.model_copy(update={"model": stored}) for g in c.hosts[1].gpus]})
    c.hosts[1] = odd
    await load(gateway, c)
    assert model_match(requested).matches(stored)
    for req in (parse_request("2"), parse_request("1 exclusive"), parse_request("2 nvlink=any")):
        placed = await PlacementEngine(gateway).place(req.with_(model=requested))
        assert placed.candidates, (stored, requested, req)
        assert {g.host for cand in placed.candidates for g in cand.gpus} == {odd.hostname}
    svc = ReservationService(gateway)
    taken = await svc.reserve(holder="job", request=parse_request("1").with_(model=requested, gpus=4), ttl_s=60)
    assert isinstance(taken, Reservation), taken
    assert {g.host for g in taken.gpus} == {odd.hostname}
