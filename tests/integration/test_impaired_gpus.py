"""Host.impaired_gpus (queries/fragments/host_impaired): how many of a host's GPUs the store's
per-GPU placement test could refuse whatever a request's bounds. placement_leaves_fit calls a host
with none ready without reading its GPUs, so the counter must follow every fact it counts through
each statement that writes one (a full ingest, the unchanged-topology paths, a metrics push, a
recount) and the v9 migration must fill it on an older graph. Both stores."""

from __future__ import annotations

from collections import defaultdict

from topo_facts import HostFacts, HostMetrics
from topo_facts.models import GPUMetrics, Health, PortState

from graphsvc.ingest.service import Fingerprints, ingest_host, ingest_metrics, recount, unchanged_batcher
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import migrate
from tests.cluster_helpers import later, load, one_unit
from tests.queries import with_test_queries

_BAD_HEALTH = (Health.FAILED, Health.DEGRADED)


def expected(host: HostFacts) -> int:
    """The oracle, from the facts: GPUs failed or degraded, in MIG mode, of another model than the
    host's (the least, as gpu_model), or without a NIC affinity via a PCIe switch to an up NIC."""
    model = min(g.model for g in host.gpus)
    state = {n.name: n.state for n in host.nics}
    links = defaultdict(list)
    for a in host.gpu_nic_affinity:
        links[a.gpu_uuid].append(a.via == "pcie-switch" and state[a.nic] not in (PortState.DOWN, PortState.INIT))
    return sum(
        1
        for g in host.gpus
        if g.health in _BAD_HEALTH or g.mig_mode or g.model != model or not links[g.uuid] or not all(links[g.uuid])
    )


async def stored(gw: Gateway, hosts: list[HostFacts]) -> list[int | None]:
    rows = await with_test_queries(gw).read("host_impaired_counts", {"hosts": [h.hostname for h in hosts]})
    by = {r["host"]: r["impaired"] for r in rows}
    return [by[h.hostname] for h in hosts]


def worn(host: HostFacts) -> HostFacts:
    """GPU 1 degraded, 2 failed, 3 in MIG mode, and the NIC GPU 5 is nearest to down."""
    gpus = [
        g.model_copy(
            update={
                "health": {1: Health.DEGRADED, 2: Health.FAILED}.get(i, Health.OK),
                "mig_mode": i == 3,
            }
        )
        for i, g in enumerate(host.gpus)
    ]
    down = {a.nic for a in host.gpu_nic_affinity if a.gpu_uuid == host.gpus[5].uuid}
    nics = [n.model_copy(update={"state": PortState.DOWN if n.name in down else PortState.ACTIVE}) for n in host.nics]
    return host.model_copy(update={"gpus": gpus, "nics": nics, "collected_at": later()})


def with_health(host: HostFacts, health: dict[int, Health]) -> HostFacts:
    gpus = [g.model_copy(update={"health": health.get(i, Health.OK)}) for i, g in enumerate(host.gpus)]
    return host.model_copy(update={"gpus": gpus, "collected_at": later()})


async def test_the_counter_follows_every_fact_it_counts(gateway: Gateway) -> None:
    cluster = one_unit(3, seed=5)
    await load(gateway, cluster)
    hosts = list(cluster.hosts)
    assert await stored(gateway, hosts) == [expected(h) for h in hosts]
    clean = hosts[0].model_copy(update={"collected_at": later()})
    assert expected(clean) == 0

    # A full ingest (a new topology: the NIC state and MIG mode are in the fingerprint).
    bad = worn(hosts[0])
    assert expected(bad) >= 4
    assert (await ingest_host(gateway, bad)).applied
    assert await stored(gateway, [bad, *hosts[1:]]) == [expected(bad), *(expected(h) for h in hosts[1:])]
    back = clean.model_copy(update={"collected_at": later()})
    assert (await ingest_host(gateway, back)).applied
    assert await stored(gateway, [back]) == [0]

    # A metrics push: degraded, then failed (the free counters move too), then ok again.
    for health, count in ((Health.DEGRADED, 1), (Health.FAILED, 1), (Health.UNKNOWN, 0)):
        push = HostMetrics(
            hostname=back.hostname, collected_at=later(), gpus=[GPUMetrics(uuid=back.gpus[4].uuid, health=health)]
        )
        assert (await ingest_metrics(gateway, push)).applied
        assert await stored(gateway, [back]) == [count], health
    # Temperature alone changes no count (and moves nothing: `impair` is false).
    push = HostMetrics(
        hostname=back.hostname,
        collected_at=later(),
        gpus=[GPUMetrics(uuid=back.gpus[4].uuid, health=Health.OK, temperature_c=90.0)],
    )
    assert (await ingest_metrics(gateway, push)).applied
    assert await stored(gateway, [back]) == [0]

    # The unchanged-topology paths: grouped (no GPU fails or recovers) and alone (one does).
    fingerprints = Fingerprints()
    batcher = unchanged_batcher(gateway)
    first = hosts[1].model_copy(update={"collected_at": later()})
    assert (await ingest_host(gateway, first, fingerprints, batcher)).applied  # in full: learns the fingerprint
    steps = [
        {0: Health.DEGRADED, 6: Health.DEGRADED},  # grouped: ingest_hosts_unchanged
        {0: Health.DEGRADED, 6: Health.FAILED},  # a GPU fails: ingest_host_unchanged
        {6: Health.FAILED},  # grouped again
        {},  # the failed GPU recovers: alone
    ]
    for step in steps:
        doc = with_health(first, step)
        assert (await ingest_host(gateway, doc, fingerprints, batcher)).applied
        assert await stored(gateway, [doc]) == [expected(doc)] == [len(step)], step
    calls = {name: stat.calls for name, stat in gateway.stats.items()}
    assert calls.get("ingest_hosts_unchanged", 0) >= 2 and calls.get("ingest_host_unchanged", 0) >= 2, calls

    # A recount puts a counter someone overwrote right again.
    await with_test_queries(gateway).write("host_impaired_set", {"hosts": [hosts[2].hostname], "value": 5})
    await recount(gateway, [hosts[2].hostname])
    assert await stored(gateway, [hosts[2]]) == [expected(hosts[2])]


async def test_the_migration_fills_it_on_a_v8_graph(gateway: Gateway) -> None:
    cluster = one_unit(3, seed=5)
    cluster.hosts = [worn(cluster.hosts[0]), *cluster.hosts[1:]]
    await load(gateway, cluster)
    assert await stored(gateway, cluster.hosts) == [expected(h) for h in cluster.hosts]  # the first host ingested
    names = [h.hostname for h in cluster.hosts]
    await with_test_queries(gateway).write("host_impaired_set", {"hosts": names, "value": None})
    assert await stored(gateway, cluster.hosts) == [None, None, None]
    await gateway.write("meta_set_version", {"version": 8, "now": 0.0})
    report = await migrate(gateway)
    assert report.applied == ("migrations/0009_1_host_impaired",)
    assert await stored(gateway, cluster.hosts) == [expected(h) for h in cluster.hosts]
    assert (await stored(gateway, cluster.hosts))[0] == expected(cluster.hosts[0]) >= 4
