"""Hosts whose rail-0 NIC has no cable, on a rail-optimised fabric, found by the one-leaf search.

The one-leaf search pages one leaf per rail group (every rail leaf of a scalable unit has the same
hosts), and used to page rail-0 leaves only: a host whose rail-0 port is unplugged or missing was
under none of them, so two real OCI hosts sharing rails 1-7 were refused `16xH100 ib-hops<=1`
while `ib-hops<=3` placed them (a probe against the brute-force oracle, stop 60). Each cabled
host's first leaf (lowest rail, then name) is now paged too: Switch.home_leaf, written by the
fabric import, by a host document that cuts a cable, and by the v7 migration.
"""

from __future__ import annotations

from pathlib import Path

from topo_collector.importers import ImportOptions, import_hosts
from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier, SwitchUplink

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.store.queries import NamedQuery, default_registry
from tests.cluster_helpers import occupy
from tests.integration.test_migrations import V8, V9
from tests.stores import NEO4J_TEST_TIMEOUT_S

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


def oci_hosts() -> list[HostFacts]:
    """Three imports of the real OCI BM.GPU.H100.8 dump: eight GPUs, one rail NIC each."""
    dump = FIXTURES / "oci-bm-gpu-h100-8.nccl.xml"
    return [h for i in range(3) for h in import_hosts(dump, ImportOptions(host=f"oci-{i}")).hosts]


def rail_fabric(hosts: list[HostFacts], uncabled: frozenset[tuple[str, str]] = frozenset()) -> FabricFacts:
    """One leaf per rail (its `rail` set, as on a SuperPOD) under two spines; `uncabled` lists the
    (host, NIC) pairs without a cable."""
    switches: dict[str, FabricSwitch] = {}
    cables: list[NICUplink] = []
    for host in hosts:
        for nic in host.nics:
            if nic.rail is None or (host.hostname, nic.name) in uncabled:
                continue
            leaf = f"leaf-r{nic.rail}"
            switches.setdefault(leaf, FabricSwitch(name=leaf, tier=SwitchTier.LEAF, rail=nic.rail))
            cables.append(NICUplink(host=host.hostname, nic=nic.name, switch=leaf, bandwidth_gbps=50.0))
    leaves = sorted(switches)
    spines = [FabricSwitch(name=f"spine{k}", tier=SwitchTier.SPINE) for k in range(2)]
    uplinks = [SwitchUplink(lower=leaf, upper=s.name, bandwidth_gbps=100.0) for leaf in leaves for s in spines]
    return FabricFacts(
        cluster="default", source="test", switches=[*switches.values(), *spines], nic_uplinks=cables,
        switch_uplinks=uplinks,
    )  # fmt: skip


def rail0_nic(host: HostFacts) -> str:
    return next(n.name for n in host.nics if n.rail == 0)


async def load(gateway: Gateway, hosts: list[HostFacts], fabric: FabricFacts) -> None:
    for host in hosts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, fabric)
    await occupy(gateway, [g.uuid for g in hosts[0].gpus])  # oci-0 taken: only oci-1 + oci-2 remain


async def placed_hosts(gateway: Gateway, text: str) -> list[str]:
    result = await PlacementEngine(gateway).place(parse_request(text).validated())
    assert result.candidates, result.infeasible
    return sorted(h.name for h in result.candidates[0].hosts)


async def most_that_fit(gateway: Gateway, text: str) -> str:
    result = await PlacementEngine(gateway).place(parse_request(text).validated(), explain_infeasible=True)
    assert not result.candidates
    return next(r.message for r in result.infeasible if r.constraint == "gpus")


async def test_a_host_without_a_rail0_cable_shares_its_other_rails_leaves(gateway: Gateway) -> None:
    hosts = oci_hosts()
    await load(gateway, hosts, rail_fabric(hosts, frozenset({("oci-2", rail0_nic(hosts[2]))})))
    assert await placed_hosts(gateway, "16xH100 ib-hops<=1") == ["oci-1", "oci-2"]
    assert await placed_hosts(gateway, "9xH100 ib-hops<=1") == ["oci-1", "oci-2"]
    # Rails 1-7 of both hosts meet under one leaf each; oci-2's rail-0 GPU has no cable.
    assert await placed_hosts(gateway, "14xH100 per-host=7 rail-aligned ib-hops<=1") == ["oci-1", "oci-2"]
    # The diagnosis counts the same leaves (placement_leaf_counts): 16 fit, not 8.
    assert "at most 16 H100 GPUs" in await most_that_fit(gateway, "17xH100 ib-hops<=1")


async def test_a_host_document_that_drops_its_rail0_nic_stays_reachable(gateway: Gateway) -> None:
    """The fabric import cabled every NIC (rail-0 leaves were every host's first); a later host
    document without the rail-0 NIC cuts that cable, and the host's first remaining leaf is paged."""
    hosts = oci_hosts()
    await load(gateway, hosts, rail_fabric(hosts))
    dropped = rail0_nic(hosts[2])
    nics = [n for n in hosts[2].nics if n.name != dropped]
    affinity = [a for a in hosts[2].gpu_nic_affinity if a.nic != dropped]
    await ingest_host(gateway, hosts[2].model_copy(update={"nics": nics, "gpu_nic_affinity": affinity}))
    assert await placed_hosts(gateway, "16xH100 ib-hops<=1") == ["oci-1", "oci-2"]
    assert "at most 16 H100 GPUs" in await most_that_fit(gateway, "17xH100 ib-hops<=1")


async def test_a_reimport_clears_a_first_leaf_it_no_longer_is(gateway: Gateway) -> None:
    hosts = oci_hosts()
    await load(gateway, hosts, rail_fabric(hosts, frozenset({("oci-2", rail0_nic(hosts[2]))})))
    assert await home_leaves(gateway) == ["leaf-r0", "leaf-r1"]
    await ingest_fabric(gateway, rail_fabric(hosts))
    assert await home_leaves(gateway) == ["leaf-r0"]


async def test_the_v7_migration_marks_first_leaves_of_an_older_graph(gateway: Gateway) -> None:
    hosts = oci_hosts()
    await load(gateway, hosts, rail_fabric(hosts, frozenset({("oci-2", rail0_nic(hosts[2]))})))
    await adhoc(gateway, "MATCH (s:Switch) REMOVE s.home_leaf")
    assert await home_leaves(gateway) == []
    assert not (await PlacementEngine(gateway).place(parse_request("16xH100 ib-hops<=1"))).candidates
    await gateway.write("meta_set_version", {"version": 6, "now": 0.0})
    report = await migrate(gateway)
    assert report.applied == ("migrations/0007_1_home_leaves", *V8, *V9)
    assert await home_leaves(gateway) == ["leaf-r0", "leaf-r1"]
    assert await placed_hosts(gateway, "16xH100 ib-hops<=1") == ["oci-1", "oci-2"]


async def home_leaves(gateway: Gateway) -> list[str]:
    rows = await adhoc(gateway, "MATCH (s:Switch) WHERE s.home_leaf = true RETURN s.name AS name ORDER BY name")
    return [str(r["name"]) for r in rows]


async def adhoc(gateway: Gateway, text: str) -> list[dict[str, object]]:
    """A test-only statement that reads or sets up an old graph shape; production code has no such path."""
    query = NamedQuery("test/adhoc", text, default_registry().root)
    return await gateway.backend.run(query, {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S)


async def test_a_host_cabled_to_two_clusters_gets_a_first_leaf_in_each(gateway: Gateway) -> None:
    """x's rail 0 is cabled to cluster C's leaf, rails 1-2 to cluster `default`'s leaves. After x's
    document drops its rail-1 NIC, one flag for x's first leaf overall (C's, rail 0) left `default`
    with no paged leaf of x's; C's next import, which rewrites only C's flags, would not add one
    (a review's case)."""
    x, y = (import_hosts(FIXTURES / "oci-bm-gpu-h100-8.nccl.xml", ImportOptions(host=n)).hosts[0] for n in "xy")

    def nic(host: HostFacts, rail: int) -> str:
        return next(n.name for n in host.nics if n.rail == rail)

    def fabric(cluster: str, leaves: dict[str, int], cables: list[tuple[HostFacts, int, str]]) -> FabricFacts:
        return FabricFacts(
            cluster=cluster, source="test",
            switches=[FabricSwitch(name=name, tier=SwitchTier.LEAF, rail=rail) for name, rail in leaves.items()],
            nic_uplinks=[NICUplink(host=h.hostname, nic=nic(h, r), switch=s, bandwidth_gbps=50) for h, r, s in cables],
        )  # fmt: skip

    for host in (x, y):
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, fabric("C", {"C-r0": 0}, [(x, 0, "C-r0")]))
    cables = [(h, r, f"D-r{r}") for h in (x, y) for r in (1, 2)]
    await ingest_fabric(gateway, fabric("default", {"D-r1": 1, "D-r2": 2}, cables))
    assert await home_leaves(gateway) == ["C-r0", "D-r1"]
    dropped = nic(x, 1)
    nics = [n for n in x.nics if n.name != dropped]
    affinity = [a for a in x.gpu_nic_affinity if a.nic != dropped]
    await ingest_host(gateway, x.model_copy(update={"nics": nics, "gpu_nic_affinity": affinity}))
    assert await home_leaves(gateway) == ["C-r0", "D-r1", "D-r2"]
    # The v7 migration flags the same: a first leaf per host and cluster (a review's case).
    await adhoc(gateway, "MATCH (s:Switch) REMOVE s.home_leaf")
    await gateway.write("migrations/0007_1_home_leaves")
    assert await home_leaves(gateway) == ["C-r0", "D-r1", "D-r2"]
