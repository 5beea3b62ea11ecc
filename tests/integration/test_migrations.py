"""The migration runner brings an older graph forward and refuses a newer one."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.ingest.service import ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.errors import GraphVersionError
from graphsvc.store.falkordb_backend import FalkorBackend
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate, stored_version
from graphsvc.store.neo4j_backend import Neo4jBackend
from graphsvc.store.queries import QueryRegistry, default_registry
from graphsvc.store.schema import GRAPH_VERSION, TIE_BUCKETS, graph_schema, tie_bucket
from tests.helpers import h100, tray
from tests.stores import NEO4J_TEST_TIMEOUT_S

V6 = ("migrations/0006_1_domain_tie_buckets_from_one", "migrations/0006_2_host_tie_buckets_from_one")
V7 = ("migrations/0007_1_home_leaves",)
V8 = ("migrations/0008_1_host_spines_cores", "migrations/0008_2_fabric_domains_in_cluster")
V9 = ("migrations/0009_1_host_impaired",)


def test_graph_version_matches_the_newest_migration() -> None:
    numbers = [n for n, _ in default_registry().migrations()]
    assert max([1, *numbers]) == GRAPH_VERSION
    assert sorted(set(numbers)) == list(range(2, GRAPH_VERSION + 1))


async def test_fresh_graph_starts_at_current_version(gateway: Gateway) -> None:
    assert await stored_version(gateway) == GRAPH_VERSION
    report = await migrate(gateway)
    assert report.applied == ()


async def test_v1_graph_is_brought_forward(gateway: Gateway) -> None:
    await ingest_host(gateway, h100())
    # Make it look like a version-1 graph: GPUs without state, hosts without gpu_count.
    await gateway.backend.run(
        _adhoc("MATCH (g:GPU) REMOVE g.state WITH count(g) AS n MATCH (h:Host) REMOVE h.gpu_count"),
        {},
        write=True,
        timeout_s=NEO4J_TEST_TIMEOUT_S,
    )
    await gateway.write("meta_set_version", {"version": 1, "now": 0.0})
    report = await migrate(gateway)
    assert (report.from_version, report.to_version) == (1, GRAPH_VERSION)
    assert report.applied == (
        "migrations/0002_1_gpu_state_default",
        "migrations/0003_1_host_counters",
        "migrations/0003_2_domain_counters",
        "migrations/0003_3_leaf_counters",
        "migrations/0004_1_mig_slices",
        "migrations/0005_1_domain_tie_buckets",
        "migrations/0005_2_host_tie_buckets",
        *V6,
        *V7,
        *V8,
        *V9,
    )
    host = await gateway.read("host_detail", {"hosts": ["node-a"]})
    assert {g["state"] for g in host[0]["gpus"]} == {"free"}
    assert await stored_version(gateway) == GRAPH_VERSION
    again = await migrate(gateway)
    assert again.applied == ()


async def test_v4_units_gain_a_static_tie_bucket_and_stay_placeable(gateway: Gateway) -> None:
    """A domain without `tie_bucket` is invisible to placement_domains_fit (its seeks match on the
    bucket), and a host without one to the largest free blocks, so v5 gives every host and domain
    one; ingest's own is a hash of the key."""
    await ingest_host(gateway, h100())
    read = _adhoc(
        "MATCH (n) WHERE n:Host OR n:NVLinkDomain "
        "RETURN coalesce(n.name, n.uuid) AS key, n.tie_bucket AS bucket, n:Host AS host"
    )
    stored = await gateway.backend.run(read, {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S)
    assert {r["host"] for r in stored} == {True, False}
    assert all(r["bucket"] == tie_bucket(str(r["key"])) for r in stored)
    await gateway.backend.run(
        _adhoc("MATCH (n) WHERE n:Host OR n:NVLinkDomain REMOVE n.tie_bucket"),
        {},
        write=True,
        timeout_s=NEO4J_TEST_TIMEOUT_S,
    )
    await gateway.write("meta_set_version", {"version": 4, "now": 0.0})
    before = await PlacementEngine(gateway).place(parse_request("8xH100 nvlink=full-mesh"))
    assert before.candidates == []
    report = await migrate(gateway)
    assert report.applied == (
        "migrations/0005_1_domain_tie_buckets",
        "migrations/0005_2_host_tie_buckets",
        *V6,
        *V7,
        *V8,
        *V9,
    )
    migrated = await gateway.backend.run(read, {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S)
    assert len(migrated) == len(stored) and all(r["bucket"] in range(1, TIE_BUCKETS + 1) for r in migrated)
    after = await PlacementEngine(gateway).place(parse_request("8xH100 nvlink=full-mesh"))
    assert after.candidates


async def test_v5_units_in_bucket_zero_move_to_the_last_bucket(gateway: Gateway) -> None:
    """v6 numbers tie buckets from 1 (graphsvc.store.schema.tie_bucket: FalkorDB loses index
    entries valued 0 when it loads a graph, so a unit in bucket 0 was invisible to the seeks after
    a restart): bucket 0 becomes the last bucket, every other unit keeps its bucket."""
    await ingest_host(gateway, h100())
    read = _adhoc(
        "MATCH (n) WHERE n:Host OR n:NVLinkDomain "
        "RETURN coalesce(n.name, n.uuid) AS key, n.tie_bucket AS bucket ORDER BY key"
    )
    stored = await gateway.backend.run(read, {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S)
    zeroed = sorted(str(r["key"]) for r in stored)[:2]
    await gateway.backend.run(
        _adhoc("MATCH (n) WHERE (n:Host OR n:NVLinkDomain) AND coalesce(n.name, n.uuid) IN $keys SET n.tie_bucket = 0"),
        {"keys": zeroed},
        write=True,
        timeout_s=NEO4J_TEST_TIMEOUT_S,
    )
    await gateway.write("meta_set_version", {"version": 5, "now": 0.0})
    report = await migrate(gateway)
    assert report.applied == (*V6, *V7, *V8, *V9)
    rows = await gateway.backend.run(read, {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S)
    migrated = {str(r["key"]): r["bucket"] for r in rows}
    assert {k: migrated[k] for k in zeroed} == {k: TIE_BUCKETS for k in zeroed}
    assert all(migrated[str(r["key"])] == r["bucket"] for r in stored if str(r["key"]) not in zeroed)
    assert (await migrate(gateway)).applied == ()
    for name in V6:  # idempotent: run again, they move nothing
        assert set((await gateway.write(name))[0].values()) == {0}


async def test_v7_fabric_cliques_are_named_within_their_cluster(gateway: Gateway) -> None:
    """v8 names a reported clique CLUSTER/fabric/REPORTED (graphsvc.ingest.host_plan.fabric_domain):
    the migration renames a v7 graph's, and a tray's next document joins the renamed domain."""
    for t in range(2):
        await ingest_host(gateway, tray(f"tray-{t}", "c/rack/clique-0", seed=t))
    await gateway.backend.run(
        _adhoc(
            "MATCH (d:NVLinkDomain {kind: 'fabric-clique'}) SET d.uuid = 'c/rack/clique-0' WITH d "
            "MATCH (d)<-[:IN_DOMAIN]-(g:GPU) SET g.nvlink_domain = d.uuid RETURN count(g) AS n"
        ),
        {},
        write=True,
        timeout_s=NEO4J_TEST_TIMEOUT_S,
    )
    await gateway.write("meta_set_version", {"version": 7, "now": 0.0})
    assert (await migrate(gateway)).applied == (*V8, *V9)
    rows = await gateway.read("nvlink_domains")
    assert [(r["uuid"], r["members"]) for r in rows] == [("default/fabric/c/rack/clique-0", 8)]
    gpus = await gateway.backend.run(
        _adhoc("MATCH (g:GPU) RETURN DISTINCT g.nvlink_domain AS d"), {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S
    )
    assert [g["d"] for g in gpus] == ["default/fabric/c/rack/clique-0"]  # what the explorer shows (a review's case)
    await ingest_host(gateway, tray("tray-2", "c/rack/clique-0", seed=2))
    rows = await gateway.read("nvlink_domains")
    assert [(r["uuid"], r["members"]) for r in rows] == [("default/fabric/c/rack/clique-0", 12)]
    assert (await migrate(gateway)).applied == ()


async def test_unversioned_graph_with_data_counts_as_v1(gateway: Gateway) -> None:
    await ingest_host(gateway, h100())
    await gateway.backend.run(_adhoc("MATCH (m:GraphMeta) DELETE m"), {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S)
    report = await migrate(gateway)
    assert report.from_version == 1 and report.to_version == GRAPH_VERSION


async def test_newer_graph_is_refused(gateway: Gateway) -> None:
    await gateway.write("meta_set_version", {"version": GRAPH_VERSION + 1, "now": 0.0})
    with pytest.raises(GraphVersionError, match="newer than this service"):
        await migrate(gateway)


async def test_a_dropped_index_and_constraint_are_created_again(gateway: Gateway, store: str) -> None:
    """The DDL step sends only what the store lacks (by name on Neo4j, by label and property on
    FalkorDB), so what a store lost must still come back, and what it has must stay."""
    backend = gateway.backend
    if store == "neo4j":
        assert isinstance(backend, Neo4jBackend)
        for statement in ("DROP INDEX host_free_gpus", "DROP CONSTRAINT site_name_unique"):
            await backend.run(_adhoc(statement), {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S)
        await migrate(gateway)
        names = {
            r["name"]
            for r in await backend.run(
                _adhoc("SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'"),
                {},
                write=False,
                timeout_s=NEO4J_TEST_TIMEOUT_S,
            )
        }
        constraints = {
            r["name"]
            for r in await backend.run(
                _adhoc("SHOW CONSTRAINTS YIELD name"), {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S
            )
        }
        assert {n for _, n, _ in graph_schema().neo4j_ddl_named()} <= names | constraints
        assert {"host_free_gpus", "site_name_unique"} <= names
        assert "site_name_unique" in constraints
        return
    assert isinstance(backend, FalkorBackend)
    await backend.run(
        _adhoc("DROP INDEX FOR (n:Host) ON (n.free_gpus)"), {}, write=True, timeout_s=NEO4J_TEST_TIMEOUT_S
    )
    for _ in range(600):  # FalkorDB's indexer thread drops it after the reply (bounded polls)
        if ("Host", "free_gpus") not in await backend._existing_indexes():
            break
        await asyncio.sleep(0.05)
    assert ("Host", "free_gpus") not in await backend._existing_indexes()
    await migrate(gateway)
    assert set(graph_schema().falkordb_indexes()) <= await backend._existing_indexes()


async def test_keys_of_labels_every_reservation_writes_are_unconstrained_on_falkordb(
    gateway: Gateway, store: str
) -> None:
    """FalkorDB constrains no key of a label every reservation writes (its constraint checks walk
    the stale index entries each write leaves, graph.toml); a graph made before stop 40 has those
    constraints and loses them at the next start, keeping the key's index. Neo4j keeps them all."""
    schema = graph_schema()
    hot = {(n.label, n.key) for n in schema.nodes.values() if n.written_per_reservation}
    labels = ("GPU", "MigSlice", "Host", "NVLinkDomain", "Switch")
    assert {(n.label, n.key) for n in schema.nodes.values() if n.label in labels} <= hot
    assert ("Reservation", "id") not in hot and ("Reservation", "id") in schema.falkordb_unique_keys()
    backend = gateway.backend
    if store == "neo4j":
        assert isinstance(backend, Neo4jBackend)
        rows = await backend.run(_adhoc("SHOW CONSTRAINTS YIELD name"), {}, write=False, timeout_s=NEO4J_TEST_TIMEOUT_S)
        assert {"gpu_uuid_unique", "host_name_unique", "reservation_id_unique"} <= {r["name"] for r in rows}
        return
    assert isinstance(backend, FalkorBackend)
    constraints = await backend._existing_constraints()
    assert not hot & set(constraints)
    assert set(schema.falkordb_unique_keys()) <= set(constraints)
    conn = backend._database().connection
    await conn.execute_command(*backend._constraint_command("CREATE", "GPU", "uuid"))  # as before stop 40
    for _ in range(600):  # it builds in the background (bounded polls)
        if (await backend._existing_constraints()).get(("GPU", "uuid")) == "OPERATIONAL":
            break
        await asyncio.sleep(0.05)
    assert (await backend._existing_constraints()).get(("GPU", "uuid")) == "OPERATIONAL"
    await migrate(gateway)
    assert ("GPU", "uuid") not in await backend._existing_constraints()
    assert ("GPU", "uuid") in await backend._existing_indexes()
    assert set(schema.falkordb_unique_keys()) <= set(await backend._existing_constraints())


def test_ddl_covers_every_label() -> None:
    ddl = "\n".join(graph_schema().neo4j_ddl())
    for label, node in graph_schema().nodes.items():
        assert f"FOR (n:{label}) REQUIRE n.{node.key} IS UNIQUE" in ddl


def _adhoc(text: str):  # type: ignore[no-untyped-def]
    """A test-only statement that sets up an old graph shape; production code has no such path."""
    from graphsvc.store.queries import NamedQuery

    return NamedQuery("test/adhoc", text, default_registry().root)


def test_registry_rejects_unknown_names(tmp_path: object) -> None:
    with pytest.raises(KeyError, match="no query named"):
        default_registry()["nope"]
    assert isinstance(default_registry(), QueryRegistry)
