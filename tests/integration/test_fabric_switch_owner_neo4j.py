"""Two clusters' first fabric imports at once, both naming one new switch, on Neo4j: one owns it.

A switch is in one cluster's fabric (`ingest_fabric` refuses a fabric naming another cluster's
switch). For a switch that does not exist yet there is no node to lock, and under read committed
each import could read "nobody has it", and the second's MERGE would then take it. What stops
that is Neo4j's locking seek on the `Switch.name` unique index: the lock block's switch read and
the guard take shared locks on the index entries of every name, existing or not, until commit, so
the second import waits for the first and then sees its switch. The import is held open here
(tests/neo4j_held.py) while the other runs: it must be refused, the switch left as the first
made it. FalkorDB runs writes one at a time: Neo4j only.
"""

from __future__ import annotations

import pytest
from topo_facts import FabricFacts, FabricSwitch, SwitchTier

from graphsvc.errors import ErrorKind
from graphsvc.ingest.service import IngestRejected, fabric_params, ingest_fabric, ingest_host
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, build
from tests.neo4j_held import HeldStatement
from tests.stores import STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")

SHARED = "shared-leaf"


def naming_the_shared_leaf(cluster: SyntheticCluster) -> FabricFacts:
    """The cluster's fabric with one more leaf, SHARED, its first NIC cabled to it."""
    fabric = cluster.fabric()
    uplinks = list(fabric.nic_uplinks)
    uplinks[0] = uplinks[0].model_copy(update={"switch": SHARED})
    return fabric.model_copy(
        update={"switches": [*fabric.switches, FabricSwitch(name=SHARED, tier=SwitchTier.LEAF)], "nic_uplinks": uplinks}
    )


async def test_two_first_imports_naming_one_new_switch_leave_it_to_the_first(neo: tuple[Gateway, Neo4jServer]) -> None:
    gw, server = neo
    east, west = build("a100-pcie:hosts=2", cluster="east"), build("l40s:hosts=2", cluster="west")
    for host in (*east.hosts, *west.hosts):
        await ingest_host(gw, host)
    first, second = naming_the_shared_leaf(east), naming_the_shared_leaf(west)
    held = HeldStatement(server)
    try:
        assert await held.start("ingest_fabric", fabric_params(first))  # written, not committed
        with pytest.raises(IngestRejected) as refused:
            await held.commit_when_blocked(ingest_fabric(gw, second))
    finally:
        await held.close()
    assert refused.value.kind is ErrorKind.CONFLICT
    assert refused.value.detail == [{"switch": SHARED, "cluster": "east"}]
    rows = await gw.read("fabric_switches_taken", {"cluster": "west", "switch_names": [SHARED]})
    assert rows == [{"switch": SHARED, "cluster": "east"}]
    page = {"after": "", "tier": "leaf", "first": 100}
    east_leaves = {r["name"]: r for r in await gw.read("fabric_switches", {**page, "cluster": "east"})}
    west_leaves = {r["name"] for r in await gw.read("fabric_switches", {**page, "cluster": "west"})}
    owner = next(h for h in east.hosts if h.hostname == first.nic_uplinks[0].host)
    assert east_leaves[SHARED]["nics"] == 1 and east_leaves[SHARED]["free_gpus"] == len(owner.gpus)
    assert SHARED not in west_leaves


async def test_two_clusters_cabling_one_nic_at_once_give_it_one_cable(neo: tuple[Gateway, Neo4jServer]) -> None:
    """A NIC has one cable. East's import cabling NIC x is held open while west's import cables x
    too: checked before the locks, both passed and x got two cables (a review's case). Checked under
    the host's lock, west waits for east and is refused."""
    gw, server = neo
    east, west = build("a100-pcie:hosts=2", cluster="east"), build("l40s:hosts=2", cluster="west")
    for h in (*east.hosts, *west.hosts):
        await ingest_host(gw, h)
    east_full = east.fabric()
    x = east_full.nic_uplinks[0]
    await ingest_fabric(gw, east_full.model_copy(update={"nic_uplinks": list(east_full.nic_uplinks[1:])}))
    west_full = west.fabric()
    await ingest_fabric(gw, west_full)
    west_with_x = west_full.model_copy(
        update={"nic_uplinks": [*west_full.nic_uplinks, x.model_copy(update={"switch": west_full.switches[0].name})]}
    )
    held = HeldStatement(server)
    try:
        assert await held.start("ingest_fabric", fabric_params(east_full))  # east cables x, not committed
        with pytest.raises(IngestRejected) as refused:
            await held.commit_when_blocked(ingest_fabric(gw, west_with_x))
    finally:
        await held.close()
    assert refused.value.kind is ErrorKind.CONFLICT and refused.value.field == "nic_uplinks"
    nic = f"{x.host}/nic/{x.nic}"
    assert await gw.read("fabric_nics_elsewhere", {"cluster": "nobody", "nic_uuids": [nic]}) == [
        {"nic": nic, "switch": x.switch, "cluster": "east"}
    ]
