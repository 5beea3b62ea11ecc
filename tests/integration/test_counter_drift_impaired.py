"""counter_drift checks Host.impaired_gpus too, and repair_counters recounts it (both stores).

placement_leaves_fit calls a host with impaired_gpus = 0 ready without reading its GPUs, so a
count written wrong (a hand edit, a graph restored from elsewhere) offers GPUs a request refuses
until something recounts the host. counter_drift, read at start-up and by the tests after
concurrent writes, checked only the free-GPU counters: such a host went unreported and unrepaired.
"""

from __future__ import annotations

import logging

import pytest

from graphsvc.ingest.counters import repair_counters
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load, one_unit
from tests.integration.test_impaired_gpus import expected, stored, worn
from tests.queries import with_test_queries
from tests.stores import adhoc


async def test_a_wrong_impaired_count_is_reported_and_repaired(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = one_unit(3, seed=5)
    cluster.hosts = [worn(cluster.hosts[0]), *cluster.hosts[1:]]
    await load(gateway, cluster)
    hosts = list(cluster.hosts)
    right = [expected(h) for h in hosts]
    assert right[0] >= 4
    assert await gateway.read("counter_drift") == []

    # Too low (the harmful way: its GPUs would be taken as ready), too high, and unset.
    tests = with_test_queries(gateway)
    await tests.write("host_impaired_set", {"hosts": [hosts[0].hostname], "value": 0})
    await tests.write("host_impaired_set", {"hosts": [hosts[1].hostname], "value": right[1] + 3})
    await tests.write("host_impaired_set", {"hosts": [hosts[2].hostname], "value": None})
    # A host with no GPU (a fabric import names a host before it is ingested) has no count to keep.
    await gateway.backend.run(adhoc("bare_host", "CREATE (:Host {name: 'bare-host'})"), {}, write=True, timeout_s=60)
    drift = sorted(
        ((r["kind"], r["key"], r["stored"], r["actual"]) for r in await gateway.read("counter_drift")),
        key=lambda row: str(row[1]),
    )
    assert drift == [
        ("HostImpaired", hosts[0].hostname, 0, right[0]),
        ("HostImpaired", hosts[1].hostname, right[1] + 3, right[1]),
        ("HostImpaired", hosts[2].hostname, None, right[2]),
    ]

    with caplog.at_level(logging.WARNING, logger="graphsvc.ingest.counters"):
        repair = await repair_counters(gateway)
    assert (repair.impaired, repair.hosts, repair.domains, repair.leaves) == (3, 0, 0, 0)
    assert any("impaired GPUs of 3 host(s)" in r.getMessage() for r in caplog.records)
    assert await gateway.read("counter_drift") == []
    assert await stored(gateway, hosts) == right
