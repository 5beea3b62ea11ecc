"""Model names in placement requests match exactly (issue 14), on the real store."""

from __future__ import annotations

import httpx

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

PLACE = """query($text: String!) { placementText(text: $text) {
  candidates { gpus { model } } infeasible { constraint message } } }"""


async def test_family_names_never_match_by_substring(gateway: Gateway) -> None:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    engine = PlacementEngine(gateway)
    for text, model in (("4xL40S", "NVIDIA L40S"), ("2xA100", "NVIDIA A100 80GB PCIe"), ("8xGB200", "NVIDIA GB200")):
        r = await engine.place(parse_request(text))
        assert r.candidates and {g.model for c in r.candidates for g in c.gpus} == {model}, text
    for text in ("1xL4", "1xA10", "1xB200", "1xH10"):
        r = await engine.place(parse_request(text))
        assert not r.candidates, text
        assert [x.constraint for x in r.infeasible] == ["model"], text
        msg = r.infeasible[0].message
        assert "unknown model" in msg and "NVIDIA L40S" in msg and "NVIDIA GB200" in msg, msg


async def test_unknown_model_is_a_typed_answer_over_graphql(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "nvl72:racks=1")
    resp = await client.post("/graphql", json={"query": PLACE, "variables": {"text": "8xB200 nvlink=full-mesh"}})
    body = resp.json()
    assert resp.status_code == 200 and "errors" not in body, body
    result = body["data"]["placementText"]
    assert result["candidates"] == []
    assert result["infeasible"][0]["constraint"] == "model"
    assert "NVIDIA GB200" in result["infeasible"][0]["message"]


async def test_reserve_with_an_unknown_model_is_infeasible_naming_the_models(gateway: Gateway) -> None:
    from graphsvc.reservations.service import Infeasible, ReservationService

    await load(gateway, "nvl72:racks=1")
    out = await ReservationService(gateway).reserve(holder="j", request=parse_request("4xB200"))
    assert isinstance(out, Infeasible)
    assert [r.constraint for r in out.reasons] == ["model"] and "NVIDIA GB200" in out.reasons[0].message
