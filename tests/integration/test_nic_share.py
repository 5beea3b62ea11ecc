"""A GPU's inter-host bandwidth is its share of the NIC ports serving it, on the real dumps (both stores).

AWS p5.48xlarge: 4 x 100 Gb/s EFA under each GPU's PCIe switch, 50 GB/s per GPU (placement said
12.5: the nearest port alone). OCI BM.GPU.H100.8: a dual-port 180 Gb/s ConnectX-7 per GPU, rails
0-7 on one port and 8-15 on the other, 45 GB/s per GPU (placement said 22.5). The nearest port
stays the GPU's NIC and rail (graphsvc.ingest.host_plan.nic_share_rates). A GPU that lost its own
ports reaches another GPU's port across the CPU: that port alone, after its own GPU's claim, so
placement never prefers it (it was rated above every healthy GPU, and halved them).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, cast

from topo_collector.derive import gpu_nic_affinity
from topo_collector.importers import ImportOptions, import_hosts
from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import PCIE_GBPS, Gpu, GpuRow, topology_gpu
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from tests.integration.test_rail_leaves import FIXTURES, adhoc

P5 = "aws-p5-48xlarge.nccl.xml"
OCI = "oci-bm-gpu-h100-8.nccl.xml"


async def load(
    gateway: Gateway, dump: str, names: list[str], *, lost: Mapping[str, Collection[str]] | None = None, **opts: Any
) -> list[HostFacts]:
    """The dump imported once per name (the importer's facts, as `topo-collector import` sends
    them), every NIC port cabled to one leaf at its own rate. `lost`: NIC ports gone from a host
    (a failed device), its affinity re-derived by the collector's rule."""
    facts = [import_hosts(FIXTURES / dump, ImportOptions(host=name, **opts)).hosts[0] for name in names]
    for i, f in enumerate(facts):
        gone = (lost or {}).get(f.hostname, ())
        nics = [n for n in f.nics if n.name not in gone]
        facts[i] = f.model_copy(update={"nics": nics, "gpu_nic_affinity": gpu_nic_affinity(list(f.gpus), nics)})
    for f in facts:
        assert (await ingest_host(gateway, f)).applied
    cables = [
        NICUplink(host=f.hostname, nic=n.name, switch="leaf", bandwidth_gbps=(n.rate_gbps or 0.0) / 8)
        for f in facts
        for n in f.nics
    ]
    switches = [FabricSwitch(name="leaf", tier=SwitchTier.LEAF)]
    await ingest_fabric(gateway, FabricFacts(cluster="default", source="test", switches=switches, nic_uplinks=cables))
    return facts


async def bottleneck(gateway: Gateway, text: str) -> tuple[list[str], float | None]:
    result = await PlacementEngine(gateway).place(parse_request(text).validated())
    assert result.candidates, result.infeasible
    best = result.candidates[0]
    return sorted(h.name for h in best.hosts), best.bottleneck_gbps


async def placement_gpus(gateway: Gateway, host: str) -> list[Gpu]:
    """The host's GPUs as both of placement's reads build them: flat rows and kept topology."""
    rows = cast(list[GpuRow], await gateway.read("placement_host_gpus", {"hosts": [host]}))
    flat = [Gpu.from_row(host, row) for row in rows]
    topo = (await gateway.read("placement_host_topology", {"hosts": [host]}))[0]["hosts"][0]
    kept = [topology_gpu(host, entry) for entry in topo["gpus"]]
    return sorted(flat, key=lambda g: g.index) + sorted(kept, key=lambda g: g.index)


async def test_aws_p5_gpus_send_over_their_four_efa_ports(gateway: Gateway) -> None:
    facts = await load(gateway, P5, ["p5-a", "p5-b"], gpu_model="NVIDIA H100 80GB HBM3")
    nearest = {a.gpu_uuid: a.nic for a in facts[0].gpu_nic_affinity}
    rails = {n.name: n.rail for n in facts[0].nics}
    for g in await placement_gpus(gateway, "p5-a"):
        assert (g.nic_share_rate_gbps, g.nic_gbps) == (400.0, 50.0)
        # The nearest port is still the GPU's NIC, at its own rate, on its own rail.
        assert (g.nic, g.nic_rate_gbps, g.rail) == (nearest[g.uuid], 100.0, rails[nearest[g.uuid]])
    assert await bottleneck(gateway, "2xH100 per-host=1") == (["p5-a", "p5-b"], 50.0)
    # Two whole hosts: the NICs (50) are no longer the bottleneck (12.5 was). The dump lists no
    # NVLink (NCCL learns it from NVML), so GPU pairs of one host meet over PCIe.
    assert await bottleneck(gateway, "16xH100 per-host=8") == (["p5-a", "p5-b"], min(PCIE_GBPS, 50.0))


async def test_oci_h100_gpus_send_over_both_ports_of_their_nic(gateway: Gateway) -> None:
    await load(gateway, OCI, ["oci-a", "oci-b"])
    for g in await placement_gpus(gateway, "oci-a"):
        assert (g.nic_rate_gbps, g.nic_share_rate_gbps, g.nic_gbps) == (180.0, 360.0, 45.0)
        assert g.rail is not None and g.rail < 8  # rails 0-7: the first port of each GPU's NIC
    assert await bottleneck(gateway, "16xH100 per-host=8") == (["oci-a", "oci-b"], 45.0)
    assert await bottleneck(gateway, "2xH100 per-host=1") == (["oci-a", "oci-b"], 45.0)


async def test_a_graph_written_before_the_share_reads_the_nearest_port(gateway: Gateway) -> None:
    """No migration: a GPU without the property is rated by its nearest port, as before."""
    await load(gateway, P5, ["p5-a", "p5-b"], gpu_model="NVIDIA H100 80GB HBM3")
    await adhoc(gateway, "MATCH (g:GPU) REMOVE g.nic_share_rate_gbps")
    assert {(g.nic_share_rate_gbps, g.nic_gbps) for g in await placement_gpus(gateway, "p5-a")} == {(None, 12.5)}
    assert await bottleneck(gateway, "2xH100 per-host=1") == (["p5-a", "p5-b"], 12.5)


async def best_gpus(gateway: Gateway, text: str) -> tuple[list[tuple[str, int]], float | None]:
    result = await PlacementEngine(gateway).place(parse_request(text).validated())
    assert result.candidates, result.infeasible
    best = result.candidates[0]
    return sorted((g.host, g.index) for g in best.gpus), best.bottleneck_gbps


P5_GPU0_LOST = {"p5-a": {"rdmap79s0", "rdmap80s0", "rdmap81s0", "rdmap82s0"}}  # under GPU0's switch


async def test_a_p5_gpu_that_lost_its_efa_ports_is_rated_below_its_siblings(gateway: Gateway) -> None:
    """The tester's case: GPU0 of p5-a lost its four EFA ports; the collector names a port under
    GPU1's switch (NUMA-local) its nearest. It was rated 1400 Gb/s (half of the 28 ports of its
    NUMA node), GPUs 1-7 200, and `2xH100 per-host=1`, which took GPU0, rated it the best-connected
    (50 GB/s against p5-b; 25 with any other GPU of p5-a)."""
    await load(gateway, P5, ["p5-a", "p5-b"], lost=P5_GPU0_LOST, gpu_model="NVIDIA H100 80GB HBM3")
    # GPU0: its nearest port (100) split with GPU1, whose own it is; GPU1 keeps all four. Both reads.
    shares = [(0, 50.0)] + [(i, 400.0) for i in range(1, 8)]
    assert [(g.index, g.nic_share_rate_gbps) for g in await placement_gpus(gateway, "p5-a")] == shares * 2
    # A set holding GPU0 is rated at GPU0's share, never above one of GPUs 1-7.
    chosen, gbps = await best_gpus(gateway, "2xH100 per-host=1")
    assert gbps == (50.0 / 8 if ("p5-a", 0) in chosen else 50.0), (chosen, gbps)
    # The whole host: GPU0's share is its bottleneck (was 25: GPUs 1-7 halved).
    assert await bottleneck(gateway, "16xH100 per-host=8") == (["p5-a", "p5-b"], 50.0 / 8)


async def test_an_oci_gpu_that_lost_its_nic_is_rated_below_its_siblings(gateway: Gateway) -> None:
    """GPU0's dual-port NIC gone on both hosts: it was rated 540 Gb/s (GPUs 1-3 180), so the
    pair of GPU0s was rated the best 2-host set (67.5 GB/s, against 45 for a pair of GPUs 4-7)."""
    lose = {"oci-a": {"mlx5_0", "mlx5_1"}, "oci-b": {"mlx5_0", "mlx5_1"}}
    await load(gateway, OCI, ["oci-a", "oci-b"], lost=lose)
    shares = [(0, 90.0)] + [(i, 360.0) for i in range(1, 8)]  # half of mlx5_3 (GPU1's); the rest their own
    for host in ("oci-a", "oci-b"):
        assert [(g.index, g.nic_share_rate_gbps) for g in await placement_gpus(gateway, host)] == shares * 2
    chosen, gbps = await best_gpus(gateway, "2xH100 per-host=1")
    assert gbps == (90.0 / 8 if {("oci-a", 0), ("oci-b", 0)} & set(chosen) else 45.0), (chosen, gbps)


async def test_placement_takes_a_gpu_with_its_own_ports_first(gateway: Gateway) -> None:
    """With GPUs 1-7 of p5-a free, a 2-host set does not take GPU0 (select._cool_first: its own
    ports first), so the set is rated at the healthy share, 50 GB/s."""
    await load(gateway, P5, ["p5-a", "p5-b"], lost=P5_GPU0_LOST, gpu_model="NVIDIA H100 80GB HBM3")
    chosen, gbps = await best_gpus(gateway, "2xH100 per-host=1")
    assert ("p5-a", 0) not in chosen and gbps == 50.0, (chosen, gbps)
