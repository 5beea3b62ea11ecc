"""Heterogeneous clusters: a request naming no model gets the best bandwidth available, unless
taking it would cost a larger job its place; the reason says which (score.py)."""

from __future__ import annotations

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import PlacementResult
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, build
from tests.cluster_helpers import load, occupy


def mixed(nvl72: bool) -> SyntheticCluster:
    """Two DGX H100 (900 GB/s), two A100 PCIe hosts of bridged pairs (600), optionally one NVL72 rack (1,800)."""
    c = SyntheticCluster("default")
    c.hosts = build("superpod-h100:sus=1").hosts[:2] + build("a100-pcie:hosts=2").hosts
    if nvl72:
        c.hosts += build("nvl72:racks=1").hosts
    return c


async def place(gw: Gateway, text: str) -> PlacementResult:
    return await PlacementEngine(gw).place(parse_request(text))


def models(result: PlacementResult) -> set[str]:
    return {g.model for g in result.candidates[0].gpus}


async def test_model_less_request_gets_the_best_bandwidth(gateway: Gateway) -> None:
    await load(gateway, mixed(nvl72=False))
    r = await place(gateway, "2 nvlink=full-mesh")
    # The A100 pair fits tighter (2 of 2 free), but an H100 board is free: 900 beats 600 GB/s,
    # and the other H100 board keeps the largest free block (8) whole.
    assert models(r) == {"NVIDIA H100 80GB HBM3"} and r.candidates[0].bottleneck_gbps == 900.0
    assert "Best bandwidth available (900 GB/s; other candidates down to 600)" in r.candidates[0].reason
    # Naming a model keeps best fit first among that model's GPUs.
    named = await place(gateway, "2xA100 nvlink=full-mesh")
    assert models(named) == {"NVIDIA A100 80GB PCIe"} and named.candidates[0].bottleneck_gbps == 600.0


async def test_the_fastest_is_skipped_when_it_would_cost_a_larger_job_its_place(gateway: Gateway) -> None:
    cluster = await load(gateway, mixed(nvl72=True))
    # The rack's free block: its 72 GPUs less the failed ones (#17: a failed GPU is never free).
    rack = sum(1 for h in cluster.hosts if h.gpus[0].model == "NVIDIA GB200" for g in h.gpus if g.health != "failed")
    r = await place(gateway, "2 nvlink=full-mesh")
    # 1,800 GB/s on the NVL72 rack would shrink the largest free block (the rack) by 2:
    # a rack-sized job would lose its only place. An H100 board keeps it.
    top = r.candidates[0]
    assert models(r) == {"NVIDIA H100 80GB HBM3"} and top.largest_free_block_after == rack
    assert "1800 GB/s was free" in top.reason and f"from {rack} to {rack - 2}" in top.reason
    assert "larger job" in top.reason
    # With every H100 taken, the A100 pair keeps the rack whole.
    await occupy(gateway, [g.uuid for h in cluster.hosts[:2] for g in h.gpus])
    r = await place(gateway, "2 nvlink=full-mesh")
    assert models(r) == {"NVIDIA A100 80GB PCIe"} and "1800 GB/s was free" in r.candidates[0].reason
    # A job only the rack can hold takes it (no H100 or A100 domain holds 16).
    whole = await place(gateway, "16 nvlink=full-mesh")
    assert models(whole) == {"NVIDIA GB200"} and whole.candidates[0].bottleneck_gbps == 1800.0
