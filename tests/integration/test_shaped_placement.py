"""Shaped jobs (tp/pp/dp groups) placed on real stores, checked against brute force."""

from __future__ import annotations

import random

import httpx
import pytest

from graphsvc.placement.shape import JobShape, Level, Tier, parse_shape
from graphsvc.placement.shaped_service import place_shaped
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_nvl72, add_spines, add_superpod_h100
from tests.cluster_helpers import load, occupy
from tests.placement_oracle import check_shaped, oracle_groups, shaped_feasible, snapshot


async def test_demo_tp8_pp2_dp4(gateway: Gateway) -> None:
    """The acceptance request: 64 H100s, every TP group inside one NVLink domain, rank map, bandwidth."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=7)
    add_spines(c, leaves, prefix="spine", sus=1)
    await load(gateway, c)
    shape = parse_shape("tp=8 pp=2 dp=4 model=H100")
    result = await place_shaped(gateway, shape)
    assert result.placement is not None, result.infeasible
    p = result.placement
    s = await snapshot(gateway)
    assert check_shaped(s, shape, p) == []
    assert len(p.ranks) == 64
    assert all(g.tier is Tier.NVLINK_DOMAIN for g in p.groups)
    levels = {b.level: b.bottleneck_gbps for b in p.bandwidth}
    assert levels["tp"] == 900.0  # NVSwitch inside an HGX H100 board
    assert levels["pp"] is not None and levels["dp"] is not None and levels["dp"] < levels["tp"]
    assert p.rail_aligned_share == 1.0
    assert p.job_tier is Tier.LEAF and not p.escalated


async def test_tp_groups_span_trays_inside_an_nvl72_rack(gateway: Gateway) -> None:
    c = SyntheticCluster("default")
    leaves = add_nvl72(c, 1, seed=3)
    add_spines(c, leaves, prefix="spine", sus=1)
    await load(gateway, c)
    shape = parse_shape("tp=8 dp=4 model=GB200 job-in=nvlink-domain:required")
    result = await place_shaped(gateway, shape)
    assert result.placement is not None, result.infeasible
    s = await snapshot(gateway)
    assert check_shaped(s, shape, result.placement) == []
    assert result.placement.job_tier is Tier.NVLINK_DOMAIN
    assert {b.level: b.bottleneck_gbps for b in result.placement.bandwidth}["dp"] == 1800.0


async def test_required_job_level_is_never_widened(gateway: Gateway) -> None:
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=5)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = c.hosts[:4]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    await load(gateway, c)
    s = await snapshot(gateway)
    exist = oracle_groups(s, JobShape(tp=8, model="H100"))
    too_big = JobShape(tp=8, dp=exist + 1, model="H100", job_level=Level(Tier.LEAF, True))
    result = await place_shaped(gateway, too_big)
    assert result.placement is None
    assert result.infeasible[0].constraint == "groupIn"  # 4 hosts: at most 4 whole healthy boards
    assert result.infeasible[0].nearest_feasible == f"tp=8 dp={exist}"


@pytest.mark.parametrize("seed", [11, 12, 13])
async def test_random_occupancy_agrees_with_brute_force(gateway: Gateway, seed: int) -> None:
    """Whenever brute force finds enough TP groups inside domains, the service places the job, validly."""
    rng = random.Random(seed)
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=seed)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = c.hosts[:3]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    await load(gateway, c)
    gpus = [g.uuid for h in c.hosts for g in h.gpus]
    await occupy(gateway, rng.sample(gpus, rng.randint(0, len(gpus) // 2)))
    s = await snapshot(gateway)
    for tp, dp in [(1, 5), (2, 3), (4, 2), (4, 4), (8, 1), (2, 7)]:
        shape = JobShape(tp=tp, dp=dp, model="H100", job_level=Level(Tier.CLUSTER, False))
        result = await place_shaped(gateway, shape)
        possible = oracle_groups(s, shape) >= shape.groups
        assert (result.placement is not None) == possible, (tp, dp, result.infeasible)
        if result.placement is not None:
            assert check_shaped(s, shape, result.placement) == []


SHAPED = """
query($text: String!) { shapedPlacement(text: $text) {
  request jobTier reason escalated
  groups { tier hosts } ranks { rank host gpuIndex tpRank ppRank dpRank }
  bandwidth { level bottleneckGbps }
  launch { hostfile contiguous ncclEnv hosts { host cudaVisibleDevices } }
  infeasible { constraint message nearestFeasible }
} }
"""


async def test_graphql_answers_and_refuses(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    resp = await client.post("/graphql", json={"query": SHAPED, "variables": {"text": "tp=8 pp=2 dp=4 model=H100"}})
    body = resp.json()["data"]["shapedPlacement"]
    assert body["infeasible"] == [] and len(body["ranks"]) == 64
    assert {g["tier"] for g in body["groups"]} == {"NVLINK_DOMAIN"}
    assert body["launch"]["contiguous"] and body["launch"]["hostfile"].count("slots=8") == 8
    bad = await client.post("/graphql", json={"query": SHAPED, "variables": {"text": "tp=8 colour=blue"}})
    refused = bad.json()["data"]["shapedPlacement"]
    assert refused["ranks"] == [] and refused["infeasible"][0]["constraint"] == "text"
    none = await client.post("/graphql", json={"query": SHAPED, "variables": {"text": "tp=8 dp=3 model=B300"}})
    assert "unknown model" in none.json()["data"]["shapedPlacement"]["infeasible"][0]["message"]


@pytest.mark.parametrize("seed", [21, 22])
async def test_required_leaf_agrees_with_brute_force(gateway: Gateway, seed: int) -> None:
    """Two units of two hosts each (different leaves): a required leaf level is placed exactly
    when brute force finds enough TP groups on hosts sharing one leaf; preferred always when any fit."""
    rng = random.Random(seed)
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 2, seed=seed)
    add_spines(c, leaves, prefix="spine", sus=2)
    by_su: dict[str | None, list[str]] = {}
    for h in c.hosts:
        by_su.setdefault(h.scalable_unit, []).append(h.hostname)
    kept = {n for names in by_su.values() for n in sorted(names)[:2]}
    c.hosts = [h for h in c.hosts if h.hostname in kept]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    await load(gateway, c)
    gpus = [g.uuid for h in c.hosts for g in h.gpus]
    await occupy(gateway, rng.sample(gpus, rng.randint(0, len(gpus) // 3)))
    s = await snapshot(gateway)
    for tp, dp in [(8, 2), (8, 3), (4, 4), (2, 9), (4, 5)]:
        for required in (True, False):
            shape = JobShape(tp=tp, dp=dp, model="H100", job_level=Level(Tier.LEAF, required))
            result = await place_shaped(gateway, shape)
            assert (result.placement is not None) == shaped_feasible(s, shape), (tp, dp, required, result.infeasible)
            if result.placement is not None:
                assert check_shaped(s, shape, result.placement) == []


STRUCTURED = """query($s: ShapedRequestInput) { shapedPlacement(shape: $s) {
  request jobTier ranks { rank } infeasible { constraint message } } }"""


async def test_graphql_structured_shape(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    shape = {"tp": 4, "dp": 4, "model": "GB200", "jobIn": {"tier": "NVLINK_DOMAIN", "required": True}}
    body = (await client.post("/graphql", json={"query": STRUCTURED, "variables": {"s": shape}})).json()
    out = body["data"]["shapedPlacement"]
    assert out["jobTier"] == "NVLINK_DOMAIN" and len(out["ranks"]) == 16
    assert out["request"] == "tp=4 pp=1 dp=4 model=GB200 group-in=nvlink-domain:required job-in=nvlink-domain:required"
    bad = {"tp": 0}
    body = (await client.post("/graphql", json={"query": STRUCTURED, "variables": {"s": bad}})).json()
    assert body["data"]["shapedPlacement"]["infeasible"][0]["constraint"] == "tp"
    neither = (await client.post("/graphql", json={"query": STRUCTURED, "variables": {}})).json()
    assert "not both or neither" in neither["data"]["shapedPlacement"]["infeasible"][0]["message"]
