"""Blast radius on real stores: reservations made through the service, failures asked over GraphQL."""

from __future__ import annotations

from typing import Any

import httpx

from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

IMPACT = """query($of: ImpactInput!) { impact(of: $of) { __typename
  ... on Impact { target name holders hostsCutOff freeGpusLost freeGpusLeft freeGpusLosingNvlink summary
                  reservations { id holder effect gpuUuids ranks hosts why } }
  ... on NotFound { message } } }"""


async def ask(client: httpx.AsyncClient, of: dict[str, Any]) -> dict[str, Any]:
    body = (await client.post("/graphql", json={"query": IMPACT, "variables": {"of": of}})).json()
    assert "errors" not in body, body
    out: dict[str, Any] = body["data"]["impact"]
    return out


async def test_host_domain_and_leaf_failures(client: httpx.AsyncClient, gateway: Gateway) -> None:
    cluster = await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    a, b = cluster.hosts[0], cluster.hosts[1]
    local = await svc.reserve(holder="local", gpus=[g.uuid for g in a.gpus[:2]])
    wide = await svc.reserve(holder="wide", gpus=[a.gpus[2].uuid, b.gpus[0].uuid])
    assert isinstance(local, Reservation) and isinstance(wide, Reservation)

    host = await ask(client, {"host": a.hostname})
    assert {r["holder"]: r["effect"] for r in host["reservations"]} == {"local": "CUT_OFF", "wide": "CUT_OFF"}
    wide_hit = next(r for r in host["reservations"] if r["holder"] == "wide")
    assert wide_hit["ranks"] == [0] and wide_hit["gpuUuids"] == [a.gpus[2].uuid]
    assert host["hostsCutOff"] == [a.hostname] and host["freeGpusLost"] > 0

    q = "query($n: String!) { host(name: $n) { gpus { index nvlinkDomain } } }"
    gpus = (await client.post("/graphql", json={"query": q, "variables": {"n": a.hostname}})).json()["data"]["host"]
    domain = next(g["nvlinkDomain"] for g in gpus["gpus"] if g["index"] == a.gpus[0].index)
    nvl = await ask(client, {"nvlinkDomain": domain})
    assert [(r["holder"], r["effect"]) for r in nvl["reservations"]] == [("local", "SLOWED")]

    # A rail-optimised unit: every host reaches 8 leaves, so a leaf failure isolates no host;
    # the multi-host reservation's GPUs on that rail are slowed, the single-host one untouched.
    rail0 = sorted({u.switch for u in cluster.nic_uplinks if u.host == a.hostname})[0]
    leaf = await ask(client, {"switch": rail0})
    assert leaf["hostsCutOff"] == [] and all(r["holder"] == "wide" for r in leaf["reservations"])

    missing = await ask(client, {"switch": "no-such-switch"})
    assert missing["__typename"] == "NotFound" and "no switch" in missing["message"]
    await svc.release(wide.id)
    after = await ask(client, {"host": a.hostname})
    assert [r["holder"] for r in after["reservations"]] == ["local"]
