"""Shaped jobs (tp/pp/dp groups) placed on real stores, checked against brute force."""

from __future__ import annotations

import itertools
import random

import httpx
import pytest

from graphsvc.placement.shape import JobShape, Level, ShapedPlacement, Tier, parse_shape
from graphsvc.placement.shaped_service import place_shaped
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_nvl72, add_spines, add_superpod_h100
from tests.cluster_helpers import load, occupy
from tests.placement_oracle import Snapshot, snapshot
from tests.placement_oracle import eligible as oracle_eligible


def check_shaped(s: Snapshot, shape: JobShape, p: ShapedPlacement) -> list[str]:
    """Every violated rule of a shaped answer, judged from the raw graph (no service code)."""
    problems: list[str] = []
    req = shape.gpu_request()
    uuids = [r.gpu_uuid for r in p.ranks]
    if sorted(r.rank for r in p.ranks) != list(range(shape.ranks)):
        problems.append("ranks are not 0..n-1")
    if len(set(uuids)) != shape.ranks:
        problems.append("a GPU used twice or the wrong count")
    problems += [f"{u}: not eligible" for u in uuids if not oracle_eligible(s, u, req)]
    by_group: dict[tuple[int, int], list[str]] = {}
    for r in p.ranks:
        by_group.setdefault((r.pp_rank, r.dp_rank), []).append(r.gpu_uuid)
        if r.rank != r.tp_rank + shape.tp * (r.dp_rank + shape.dp * r.pp_rank):
            problems.append(f"rank {r.rank}: not Megatron order")
    if len(by_group) != shape.groups or any(len(v) != shape.tp for v in by_group.values()):
        problems.append("groups are not pp*dp groups of tp")
    if shape.group_level.required and shape.group_level.tier is Tier.NVLINK_DOMAIN:
        for key, members in by_group.items():
            doms = {s.domain_of.get(u) for u in members}
            if len(doms) != 1 or None in doms:
                problems.append(f"group {key}: not inside one NVLink domain")
    return problems


def oracle_groups(s: Snapshot, shape: JobShape) -> int:
    """How many disjoint TP groups inside one NVLink domain exist (brute force per domain)."""
    req = shape.gpu_request()
    by_domain: dict[str, list[str]] = {}
    for u, d in s.domain_of.items():
        if oracle_eligible(s, u, req):
            by_domain.setdefault(d, []).append(u)
    return sum(_most_groups(s, sorted(members), shape.tp) for members in by_domain.values())


def _most_groups(s: Snapshot, pool: list[str], tp: int) -> int:
    """Disjoint NVLink cliques of size tp in one domain (greedy is exact in switched domains)."""
    count = 0
    rest = pool
    while len(rest) >= tp:
        combo = next(
            (
                c
                for c in itertools.combinations(rest, tp)
                if all(s.nvlink.has_edge(a, b) for a, b in itertools.combinations(c, 2))
            ),
            None,
        )
        if combo is None:
            return count
        count += 1
        rest = [u for u in rest if u not in combo]
    return count


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
