"""kill -9 of the store and the service during a storm of preemptions (immediate ones, and ones
left in their grace period): after restart every preemption happened whole or not at all."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.crash_harness import kill_9_mid_storm, start_with_cluster

pytestmark = pytest.mark.slow
ATTEMPTS_PER_CLIENT = 150

RESERVE = """mutation($holder: String!, $gpus: [String!]) {
  reserve(input: {holder: $holder, gpus: $gpus, ttlSeconds: 3600, preemptible: true, priority: 0}) {
    __typename ... on Reservation { id } } }"""
PREEMPT = """mutation($holder: String!, $priority: Int!, $grace: Int!) {
  preempt(input: {holder: $holder, request: {gpus: 2, model: "L40S"}, priority: $priority, graceSeconds: $grace,
                  preemptible: true, ttlSeconds: 3600}) {
    __typename ... on Reservation { id gpus { uuid } }
    ... on PendingPreemption { reservation { id } victims { reservation } } } }"""
LIST = """query($after: String) { reservations(first: 500, after: $after) { id state gpus { uuid state } } }"""


def _all(c: httpx.Client) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = None
    while True:
        page = c.post("/graphql", json={"query": LIST, "variables": {"after": after}}).json()["data"]["reservations"]
        out.extend(page)
        if len(page) < 500:
            return out
        after = page[-1]["id"]


def test_kill_9_during_preemptions_is_all_or_nothing(tmp_path: Path, store: str) -> None:
    service, uuids = start_with_cluster(tmp_path, store, "l40s:hosts=8")
    with httpx.Client(base_url=service.url, timeout=120) as c:
        for i in range(0, len(uuids) - 1, 2):  # every GPU held by a low-priority preemptible job
            body = {"query": RESERVE, "variables": {"holder": f"low{i}", "gpus": uuids[i : i + 2]}}
            assert c.post("/graphql", json=body).json()["data"]["reserve"]["__typename"] == "Reservation"
    acked: dict[str, list[str]] = {}
    pending: list[str] = []
    lock = threading.Lock()

    def client(n: int, stop: threading.Event) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=service.url, timeout=120) as c:
            for attempt in range(ATTEMPTS_PER_CLIENT):  # bounded work, whatever the machine's speed
                if stop.is_set():
                    return
                grace = 3600 if rng.random() < 0.1 else 0
                variables = {"holder": f"p{n}-{attempt}", "priority": attempt + 1, "grace": grace}
                try:
                    resp = c.post("/graphql", json={"query": PREEMPT, "variables": variables})
                except httpx.HTTPError:
                    return
                if resp.status_code != 200:
                    continue
                out = (resp.json().get("data") or {}).get("preempt") or {}
                with lock:
                    if out.get("__typename") == "Reservation":
                        acked[out["id"]] = sorted(g["uuid"] for g in out["gpus"])
                    elif out.get("__typename") == "PendingPreemption":
                        pending.append(out["reservation"]["id"])

    kill_9_mid_storm(service, 4, client, lambda: len(acked) >= 10)
    assert len(acked) >= 10
    service.start()
    try:
        with httpx.Client(base_url=service.url, timeout=30) as c:
            everything = _all(c)
    finally:
        service.stop()
    by_id = {r["id"]: r for r in everything}
    seen: dict[str, str] = {}
    for r in everything:
        held = [g["uuid"] for g in r["gpus"] if g["state"] == "reserved"]
        if r["state"] == "active":
            assert len(held) == len(r["gpus"]) > 0, f"half-written reservation {r['id']}"
        else:
            assert held == [], f"{r['state']} reservation {r['id']} still holds {held}"
        for u in held:
            assert u not in seen, f"{u} held by {seen[u]} and {r['id']}"
            seen[u] = r["id"]
    for rid, gpus in acked.items():  # acknowledged: there, whole, unless a later preemption ended it
        got = by_id[rid]
        assert got["state"] in ("active", "preempted"), got
        if got["state"] == "active":
            assert sorted(g["uuid"] for g in got["gpus"]) == gpus
    for rid in pending:  # still waiting for its grace period, or completed (and maybe preempted since), or failed
        assert by_id[rid]["state"] in ("pending", "active", "preempted", "failed")
        if by_id[rid]["state"] == "pending":
            assert by_id[rid]["gpus"] == []
