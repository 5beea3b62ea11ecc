"""Placement keeps each host's topology between requests (graphsvc.placement.topology_cache), and
a host's new document or a new fabric is seen by the next request, on both stores.

One engine across all steps (as the service holds one); one host left free, so every candidate
is on it and shows what the engine believes of its GPUs.
"""

from __future__ import annotations

from datetime import timedelta

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import Gpu
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from tests.cluster_helpers import load, occupy
from tests.placement_oracle import check_candidate, snapshot
from tests.stores import adhoc

TOPOLOGY = "placement_host_topology"


def topology_reads(gw: Gateway) -> int:
    stat = gw.stats.get(TOPOLOGY)
    return stat.calls if stat else 0


async def only_free_host(gw: Gateway) -> tuple[SyntheticCluster, str]:
    cluster = await load(gw, "superpod-h100:sus=1")
    free = cluster.hosts[3].hostname
    await occupy(gw, [g.uuid for h in cluster.hosts if h.hostname != free for g in h.gpus])
    return cluster, free


async def candidate_gpus(gw: Gateway, engine: PlacementEngine, text: str) -> list[Gpu]:
    req = parse_request(text)
    result = await engine.place(req)
    assert result.candidates, text
    snap = await snapshot(gw)
    for c in result.candidates:
        assert check_candidate(snap, req, [g.uuid for g in c.gpus]) == [], text
    return result.candidates[0].gpus


async def test_a_host_is_read_once_then_joined_from_what_is_kept(gateway: Gateway) -> None:
    _, free = await only_free_host(gateway)
    engine = PlacementEngine(gateway)
    first = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert {g.host for g in first} == {free}
    assert topology_reads(gateway) == 1
    again = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 1  # kept: only the candidate statement ran
    assert [(g.uuid, g.index, g.nic, g.leaf, g.nvlink_domain) for g in again] == [
        (g.uuid, g.index, g.nic, g.leaf, g.nvlink_domain) for g in first
    ]
    assert all(g.leaf for g in again)


async def test_a_new_host_document_is_seen_by_the_next_request(gateway: Gateway) -> None:
    cluster, free = await only_free_host(gateway)
    engine = PlacementEngine(gateway)
    before = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    facts = next(h for h in cluster.hosts if h.hostname == free)
    bigger = facts.model_copy(
        update={
            "collected_at": facts.collected_at + timedelta(seconds=60),
            "gpus": [g.model_copy(update={"memory_mib": (g.memory_mib or 0) + 1024}) for g in facts.gpus],
        }
    )
    await ingest_host(gateway, bigger)
    after = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 2
    assert [g.memory_mib for g in after] == [(g.memory_mib or 0) + 1024 for g in before]


async def test_a_document_with_only_new_health_and_load_keeps_the_topology(gateway: Gateway) -> None:
    cluster, free = await only_free_host(gateway)
    engine = PlacementEngine(gateway)
    await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    facts = next(h for h in cluster.hosts if h.hostname == free)
    warmer = facts.model_copy(
        update={
            "collected_at": facts.collected_at + timedelta(seconds=60),
            "gpus": [g.model_copy(update={"temperature_c": 71.0}) for g in facts.gpus],
        }
    )
    await ingest_host(gateway, warmer)
    after = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 1  # the fingerprint leaves health and load out
    assert {g.temperature_c for g in after} == {71.0}  # live fields come from the store each time


async def test_a_new_fabric_is_seen_by_the_next_request(gateway: Gateway) -> None:
    cluster, free = await only_free_host(gateway)
    engine = PlacementEngine(gateway)
    before = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert all(g.leaf for g in before)
    fabric = cluster.fabric()
    uncabled = fabric.model_copy(update={"nic_uplinks": [u for u in fabric.nic_uplinks if u.host != free]})
    await ingest_fabric(gateway, uncabled)
    after = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 2
    assert [g.uuid for g in after] == [g.uuid for g in before]
    assert {g.leaf for g in after} == {None}  # its NICs reach no leaf now


async def test_a_host_without_a_fingerprint_is_read_every_time(gateway: Gateway) -> None:
    _, free = await only_free_host(gateway)
    forget = adhoc("forget_fingerprint", "MATCH (h:Host {name: $host}) SET h.facts_fingerprint = NULL RETURN h.name")
    await gateway.backend.run(forget, {"host": free}, write=True, timeout_s=30)
    engine = PlacementEngine(gateway)
    await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 2
    assert len(engine.topology) == 0


async def test_a_nic_dropped_and_listed_again_comes_back_without_its_cable(gateway: Gateway) -> None:
    """The same document again after one without the host's NICs: the same fingerprint, but the
    NICs' cables went with them (the next fabric import brings them back), so the kept topology
    must not be used."""
    cluster, free = await only_free_host(gateway)
    engine = PlacementEngine(gateway)
    assert all(g.leaf for g in await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh"))
    facts = next(h for h in cluster.hosts if h.hostname == free)
    later = facts.collected_at + timedelta(seconds=60)
    await ingest_host(gateway, facts.model_copy(update={"collected_at": later, "nics": [], "gpu_nic_affinity": []}))
    await ingest_host(gateway, facts.model_copy(update={"collected_at": later + timedelta(seconds=60)}))
    after = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert topology_reads(gateway) == 2
    assert {g.leaf for g in after} == {None} and all(g.nic for g in after)
    await ingest_fabric(gateway, cluster.fabric())
    assert all(g.leaf for g in await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh"))


async def test_a_fabric_import_uncabling_a_host_of_another_cluster_clears_its_position(gateway: Gateway) -> None:
    cluster, free = await only_free_host(gateway)
    facts = next(h for h in cluster.hosts if h.hostname == free)
    moved = facts.model_copy(
        update={"cluster": "elsewhere", "collected_at": facts.collected_at + timedelta(seconds=60)}
    )
    await ingest_host(gateway, moved)
    await ingest_fabric(gateway, cluster.fabric())  # still cabled to this cluster's leaves
    engine = PlacementEngine(gateway)
    assert all(g.leaf for g in await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh"))
    fabric = cluster.fabric()
    await ingest_fabric(
        gateway, fabric.model_copy(update={"nic_uplinks": [u for u in fabric.nic_uplinks if u.host != free]})
    )
    after = await candidate_gpus(gateway, engine, "8xH100 nvlink=full-mesh")
    assert {g.leaf for g in after} == {None}
    read = adhoc("host_position", "MATCH (h:Host {name: $host}) RETURN h.leaves AS leaves, h.fabric_digest AS digest")
    (row,) = await gateway.backend.run(read, {"host": free}, write=False, timeout_s=30)
    assert row == {"leaves": [], "digest": None}
