"""Every request filter holds on every search path (issue 14: `excludeHosts` was ignored by
NVLink-domain searches, so `reserve` booked drained hosts).

One test per path: single host, NVLink domain (NVL72 spanning trays), leaf group, whole
cluster, the preemption plan (its extra-host search) and `reserve` through the API, both by
request and preempting. Each would fail if that path dropped the exclusion.
"""

from __future__ import annotations

from typing import Any

import httpx

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import PlacementRequest, parse_request
from graphsvc.reservations.service import Infeasible, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def hosts_placed(gw: Gateway, req: PlacementRequest) -> list[set[str]]:
    result = await PlacementEngine(gw).place(req)
    return [{g.host for g in c.gpus} for c in result.candidates]


async def test_exclude_holds_in_single_host_search(gateway: Gateway) -> None:
    cluster = await load(gateway, "superpod-h100:sus=1")
    names = [h.hostname for h in cluster.hosts]
    drained = tuple(names[:-1])
    req = parse_request("8xH100 nvlink=full-mesh limit=5").with_(exclude_hosts=drained)
    found = await hosts_placed(gateway, req)
    assert found == [{names[-1]}]


async def test_exclude_holds_in_nvlink_domain_search(gateway: Gateway) -> None:
    cluster = await load(gateway, "nvl72:racks=1")
    names = sorted(h.hostname for h in cluster.hosts)
    kept = names[15:17]  # 2 of 18 trays left, 8 healthy GPUs (t18 has a failed one)
    drained = tuple(n for n in names if n not in kept)
    req = parse_request("8xGB200 nvlink=full-mesh limit=5").with_(exclude_hosts=drained)
    found = await hosts_placed(gateway, req)
    assert found == [set(kept)]
    too_many = await PlacementEngine(gateway).place(parse_request("12xGB200 nvlink=full-mesh").with_(
        exclude_hosts=drained))  # fmt: skip
    assert not too_many.candidates
    assert "excludeHosts" in {r.constraint for r in too_many.infeasible}
    # `same-domain` (nvlink=any) takes the same path.
    same = parse_request("4xGB200 same-domain limit=10").with_(exclude_hosts=drained)
    found = await hosts_placed(gateway, same)
    assert found and all(hosts <= set(kept) for hosts in found)


async def test_other_filters_hold_in_nvlink_domain_search(gateway: Gateway) -> None:
    cluster = build("nvl72:racks=1")
    cluster.hosts.sort(key=lambda h: h.hostname)
    # Two trays run too hot: a temperature limit must keep them out of a domain placement.
    for i in range(2):
        tray = cluster.hosts[i]
        cluster.hosts[i] = tray.model_copy(update={"gpus": [g.model_copy(update={"temperature_c": 95.0})
                                                             for g in tray.gpus]})  # fmt: skip
    await load(gateway, cluster)
    hot = {t.hostname for t in cluster.hosts[:2]}
    found = await hosts_placed(gateway, parse_request("56xGB200 nvlink=full-mesh temp<=85 limit=3"))
    assert found and all(not (hosts & hot) for hosts in found)
    # 72 GPUs, 3 unhealthy, 8 too hot: 61 left.
    none = await PlacementEngine(gateway).place(parse_request("62xGB200 nvlink=full-mesh temp<=85"))
    assert not none.candidates


async def test_exclude_holds_in_leaf_and_cluster_searches(gateway: Gateway) -> None:
    cluster = await load(gateway, "superpod-h100:sus=1")
    names = sorted(h.hostname for h in cluster.hosts)
    drained = tuple(names[2:])
    for text in ("16xH100 per-host=8 ib-hops<=1 limit=5", "16xH100 limit=5"):
        req = parse_request(text).with_(exclude_hosts=drained)
        assert await hosts_placed(gateway, req) == [set(names[:2])], text


async def test_exclude_holds_in_preemption_plan(gateway: Gateway) -> None:
    cluster = await load(gateway, "nvl72:racks=1")
    trays = sorted(cluster.hosts, key=lambda h: h.hostname)
    svc = ReservationService(gateway)
    kept = {t.hostname for t in trays[15:17]}
    drained = tuple(t.hostname for t in trays if t.hostname not in kept)
    # Every tray held preemptibly: the plan must never displace onto an excluded tray.
    for tray in trays:
        held = await svc.reserve(holder=f"batch-{tray.hostname}", gpus=[g.uuid for g in tray.gpus], priority=1,
                                 preemptible=True)  # fmt: skip
        assert isinstance(held, Reservation)
    plan = await svc.preemption_plan(parse_request("8xGB200 nvlink=full-mesh").with_(exclude_hosts=drained), 9)
    assert plan.feasible and set(plan.hosts) <= kept, plan.hosts
    won = await svc.reserve(holder="urgent", request=parse_request("8xGB200 nvlink=full-mesh").with_(
        exclude_hosts=drained), priority=9, allow_preemption=True)  # fmt: skip
    assert isinstance(won, Reservation)
    assert {g.host for g in won.gpus} <= kept


RESERVE = """mutation($exclude: [String!]!) { reserve(input: {request: {gpus: 8, model: "GB200",
nvlink: FULL_MESH, excludeHosts: $exclude}, holder: "job-1", ttlSeconds: 600}) { __typename
... on Reservation { gpus { uuid host { name } } } ... on Infeasible { reasons { constraint } } } }"""


async def test_reserve_never_books_an_excluded_host(client: httpx.AsyncClient, gateway: Gateway) -> None:
    cluster = await load(gateway, "nvl72:racks=1")
    names = sorted(h.hostname for h in cluster.hosts)
    kept = names[15:17]
    drained = [n for n in names if n not in kept]
    got = (await gql(client, RESERVE, {"exclude": drained}))["reserve"]
    assert got["__typename"] == "Reservation", got
    assert {g["host"]["name"] for g in got["gpus"]} == set(kept)
    # The two free trays are now held: nothing else may be booked.
    again = (await gql(client, RESERVE, {"exclude": drained}))["reserve"]
    assert again["__typename"] == "Infeasible", again
    svc = ReservationService(gateway)
    out = await svc.reserve(holder="j2", request=parse_request("4xGB200 same-domain").with_(
        exclude_hosts=tuple(drained)))  # fmt: skip
    assert isinstance(out, Infeasible)
