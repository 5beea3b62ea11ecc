"""IB hops on fabrics that are not one clean tree, against the brute-force oracle (both stores).

Hops are counted up to the lowest switch above both hosts and down again: a shared leaf 1, a
shared spine 3, a shared core 5 (Host.spines and Host.cores, graph v8). One pod per host said 5
where a second plane's spine joins two hosts in 3 (dual-plane hosts refused `ib-hops<=3`), and 5
where no switch joins them at all (leaf islands placed under `ib-hops<=5`; a probe's cases).
Four imports of the real OCI BM.GPU.H100.8 dump: rails 0-7 on one port per GPU, 8-15 on its second.
"""

from __future__ import annotations

from collections.abc import Callable

from topo_collector.importers import ImportOptions, import_hosts
from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier, SwitchUplink

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.placement.shape import parse_shape
from graphsvc.placement.shaped_service import place_shaped
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from tests import placement_oracle as oracle
from tests.integration.test_migrations import V8, V9
from tests.integration.test_rail_leaves import FIXTURES, adhoc

SU = {"a0": "A", "a1": "A", "b0": "B", "b1": "B"}


def hosts() -> list[HostFacts]:
    dump = FIXTURES / "oci-bm-gpu-h100-8.nccl.xml"
    return [h for name in SU for h in import_hosts(dump, ImportOptions(host=name)).hosts]


def fabric(
    facts: list[HostFacts], leaf_of: Callable[[str, int], str | None], uplinks: list[tuple[str, str, SwitchTier]]
) -> FabricFacts:
    switches: dict[str, FabricSwitch] = {}
    cables = []
    for host in facts:
        for nic in host.nics:
            leaf = leaf_of(host.hostname, nic.rail or 0)
            if leaf is not None:
                switches[leaf] = FabricSwitch(name=leaf, tier=SwitchTier.LEAF)
                cables.append(NICUplink(host=host.hostname, nic=nic.name, switch=leaf, bandwidth_gbps=50.0))
    for _lower, upper, tier in uplinks:
        switches.setdefault(upper, FabricSwitch(name=upper, tier=tier))
    links = [SwitchUplink(lower=lower, upper=upper, bandwidth_gbps=100.0) for lower, upper, _ in uplinks]
    return FabricFacts(
        cluster="default", source="test", switches=list(switches.values()), nic_uplinks=cables, switch_uplinks=links
    )


def dual_plane(facts: list[HostFacts]) -> FabricFacts:
    """Rails 0-7 under each SU's own leaves and spine (sa, sb; a core over both); rails 8-15 under
    each SU's plane-2 leaves, all of them under one spine z2: a0-b0 is P2A leaf - z2 - P2B leaf."""
    links = [(f"{su}-r{r}", f"s{su.lower()}", SwitchTier.SPINE) for su in "AB" for r in range(8)]
    links += [(f"P2{su}-r{r}", "z2", SwitchTier.SPINE) for su in "AB" for r in range(8, 16)]
    links += [("sa", "core", SwitchTier.CORE), ("sb", "core", SwitchTier.CORE)]
    return fabric(facts, lambda h, r: f"{SU[h]}-r{r}" if r < 8 else f"P2{SU[h]}-r{r}", links)


def islands(facts: list[HostFacts]) -> FabricFacts:
    """a0, a1 on leaf X and b0, b1 on leaf Y, no switch above either (GPU-affine ports only)."""
    return fabric(facts, lambda h, r: ("X" if SU[h] == "A" else "Y") if r < 8 else None, [])


async def load(gateway: Gateway, facts: list[HostFacts], fab: FabricFacts) -> oracle.Snapshot:
    for host in facts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, fab)
    return await oracle.snapshot(gateway)


async def answer(gateway: Gateway, text: str) -> tuple[list[str], int | None]:
    result = await PlacementEngine(gateway).place(parse_request(text).validated())
    if not result.candidates:
        return [], None
    best = result.candidates[0]
    return sorted(h.name for h in best.hosts), best.max_ib_hops


async def test_dual_plane_hosts_meet_under_the_second_planes_spine(gateway: Gateway) -> None:
    snap = await load(gateway, hosts(), dual_plane(hosts()))
    assert oracle.hops(snap, "a0", "b0") == 3 and oracle.hops(snap, "a0", "a1") == 1
    for text in ["16xH100 per-host=8 ib-hops<=3 exclude=a1,b1", "16xH100 ib-hops<=3 exclude=a1,b1"]:
        assert oracle.feasible(snap, parse_request(text).validated())
        assert await answer(gateway, text) == (["a0", "b0"], 3)  # refused: a pod each, said 5 apart
    rows = await gateway.read("host_fabric_position", {"hosts": ["a0"]})
    assert (sorted(rows[0]["spines"]), rows[0]["cores"]) == (["sa", "z2"], ["core"])


async def test_leaf_islands_are_no_hops_apart(gateway: Gateway) -> None:
    snap = await load(gateway, hosts(), islands(hosts()))
    assert oracle.hops(snap, "a0", "b0") is None
    for text in ["16xH100 per-host=8 ib-hops<=5 exclude=a1,b1", "16xH100 ib-hops<=5 exclude=a1,b1"]:
        assert not oracle.feasible(snap, parse_request(text).validated())
        assert await answer(gateway, text) == ([], None)  # placed a0 + b0, "5 hops", with no path
    # Within one island the wide search still finds a set: a0 + a1 share leaf X.
    assert await answer(gateway, "16xH100 ib-hops<=5 exclude=b0,b1") == (["a0", "a1"], 1)


async def test_a_placement_with_no_hop_limit_across_islands_says_no_path_is_known(gateway: Gateway) -> None:
    """Without a hop limit a0 + b0 may be placed, but no switch joins them: the answer said
    `maxIbHops: 0`, as if they shared a NIC, and its reason "at most 0 IB switch hops"."""
    await load(gateway, hosts(), islands(hosts()))
    result = await PlacementEngine(gateway).place(parse_request("16xH100 per-host=8 exclude=a1,b1").validated())
    best = result.candidates[0]
    assert sorted(h.name for h in best.hosts) == ["a0", "b0"]
    assert (best.max_ib_hops, best.ib_hops_known) == (0, False)
    assert "no InfiniBand path known between its hosts" in best.reason
    joined = await PlacementEngine(gateway).place(parse_request("16xH100 per-host=8 exclude=b0,b1").validated())
    assert (joined.candidates[0].max_ib_hops, joined.candidates[0].ib_hops_known) == (1, True)
    assert "at most 1 IB switch hop between hosts" in joined.candidates[0].reason


async def test_leaves_straight_under_a_core_are_3_hops_apart(gateway: Gateway) -> None:
    """A two-tier fabric whose top is named core: the switch above a leaf counts whatever its tier
    (hosts under two leaves were said to have no path, and ib-hops<=5 refused them; a review's case)."""
    fab = fabric(hosts(), lambda h, r: ("X" if SU[h] == "A" else "Y") if r < 8 else None,
                 [("X", "C", SwitchTier.CORE), ("Y", "C", SwitchTier.CORE)])  # fmt: skip
    snap = await load(gateway, hosts(), fab)
    assert oracle.hops(snap, "a0", "b0") == 3
    for text in ["16xH100 per-host=8 ib-hops<=3 exclude=a1,b1", "16xH100 ib-hops<=5 exclude=a1,b1"]:
        assert oracle.feasible(snap, parse_request(text).validated())
        assert await answer(gateway, text) == (["a0", "b0"], 3)


async def test_a_host_that_loses_its_second_plane_cables_leaves_that_planes_spine(gateway: Gateway) -> None:
    """b0's document drops its rails 8-15 NICs: it no longer reaches z2, so it is 5 hops from a0
    (sb - core - sa), not 3. Kept as the import wrote them, its spines still named z2."""
    facts = hosts()
    await load(gateway, facts, dual_plane(facts))
    b0 = facts[2]
    kept = [n for n in b0.nics if (n.rail or 0) < 8]
    names = {n.name for n in kept}
    affinity = [a for a in b0.gpu_nic_affinity if a.nic in names]
    await ingest_host(gateway, b0.model_copy(update={"nics": kept, "gpu_nic_affinity": affinity}))
    snap = await oracle.snapshot(gateway)
    assert oracle.hops(snap, "a0", "b0") == 5
    assert await answer(gateway, "16xH100 per-host=8 ib-hops<=3 exclude=a1,b1") == ([], None)
    assert await answer(gateway, "16xH100 per-host=8 ib-hops<=5 exclude=a1,b1") == (["a0", "b0"], 5)


async def test_the_v8_migration_gives_an_older_graph_its_spines_and_cores(gateway: Gateway) -> None:
    facts = hosts()
    await load(gateway, facts, dual_plane(facts))
    await adhoc(gateway, "MATCH (h:Host) REMOVE h.spines, h.cores")
    assert await answer(gateway, "16xH100 ib-hops<=3 exclude=a1,b1") == ([], None)
    await gateway.write("meta_set_version", {"version": 7, "now": 0.0})
    report = await migrate(gateway)
    assert report.applied == (*V8, *V9)
    rows = await gateway.read("host_fabric_position", {"hosts": ["a0", "b1"]})
    assert {r["host"]: (sorted(r["spines"]), r["cores"]) for r in rows} == {
        "a0": (["sa", "z2"], ["core"]),
        "b1": (["sb", "z2"], ["core"]),
    }
    assert await answer(gateway, "16xH100 ib-hops<=3 exclude=a1,b1") == (["a0", "b0"], 3)


async def test_a_shaped_job_does_not_span_leaf_islands(gateway: Gateway) -> None:
    """The cluster tier is one island of a cluster: `tp=8 dp=2` across a0 (leaf X) and b0 (leaf
    Y, no switch above either) was placed at tier cluster:default with a NIC's bandwidth between
    hosts with no path (a probe's case)."""
    facts = [h for h in hosts() if h.hostname in ("a0", "b0")]
    snap = await load(gateway, facts, islands(facts))
    assert oracle.hops(snap, "a0", "b0") is None
    for text in ["tp=8 dp=2 model=H100", "tp=8 dp=2 model=H100 job-in=cluster"]:
        result = await place_shaped(gateway, parse_shape(text))
        assert result.placement is None, result.placement
        assert result.infeasible


async def test_a_shaped_job_does_not_join_a_host_no_fabric_cables_to_an_island(gateway: Gateway) -> None:
    """b0 has no cable in the imported fabric, a0 and a1 share leaf X: b0 was given the largest
    island's unit, so `tp=8 dp=2` spanned a0 and b0 with no path known; a0 + a1 is the place."""
    facts = [h for h in hosts() if h.hostname in ("a0", "a1", "b0")]
    await load(gateway, facts, fabric(facts, lambda h, r: "X" if SU[h] == "A" and r < 8 else None, []))
    result = await place_shaped(gateway, parse_shape("tp=8 dp=2 model=H100 exclude=a1"))
    assert result.placement is None and result.infeasible, result.placement
    placed = await place_shaped(gateway, parse_shape("tp=8 dp=2 model=H100"))
    assert placed.placement is not None
    assert sorted({slot.host for slot in placed.placement.ranks}) == ["a0", "a1"]
