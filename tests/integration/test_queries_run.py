"""Every named query runs on the real embedded store with realistic parameters.

The lint test proves Neo4j accepts each query; this proves FalkorDB runs it.
A new query without an entry in EXAMPLES fails here, on purpose.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from graphsvc.ingest.host_plan import host_params
from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import default_registry
from graphsvc.synthetic.clusters import build

CLUSTER = build("demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
FIRST = CLUSTER.hosts[0]

EXAMPLES: dict[str, dict[str, Any]] = {
    "meta_version": {},
    "meta_set_version": {"version": 2, "now": 0.0},
    "graph_is_empty": {},
    "health_counts": {},
    "stale_hosts_count": {"cutoff": time.time()},
    "host_detail": {"name": FIRST.hostname},
    "host_domains": {"host": FIRST.hostname},
    "host_racks": {"name": FIRST.hostname},
    "ingest_host": host_params(FIRST, received_at=time.time()),
    "ingest_host_blockers": {"host": FIRST.hostname, "gpu_uuids": [g.uuid for g in FIRST.gpus]},
    "ingest_fabric": {
        "cluster": "default",
        "nic_uuids": [],
        "switch_names": [],
        "switches": [],
        "nic_uplinks": [],
        "switch_uplinks": [],
    },
    "missing_nics": {"nic_uuids": ["nope/nic/x"]},
    "prune_nvlink_domains": {"uuids": ["nope"]},
    "nvlink_domains": {},
    "gpus_by_uuid": {"uuids": [FIRST.gpus[0].uuid]},
    "export_nodes": {"limit": 10},
    "export_relationships": {"limit": 10},
    "migrations/0002_gpu_state_default": {},
    "reset_graph": {},
    "update_gpu_metrics": {
        "host": FIRST.hostname,
        "collected_at": time.time() + 1,
        "received_at": time.time(),
        "metrics": {FIRST.gpus[0].uuid: {"temperature_c": 50.0}},
    },
    "host_freshness": {"host": FIRST.hostname},
    "host_gpu_nics": {"host": FIRST.hostname},
}


@pytest.fixture
async def loaded(gateway: Gateway) -> Gateway:
    for host in CLUSTER.hosts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, CLUSTER.fabric())
    return gateway


def test_every_query_has_an_example() -> None:
    assert sorted(default_registry().names()) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_query_runs_on_embedded_store(loaded: Gateway, name: str) -> None:
    query = loaded.registry[name]
    if query.writes:
        await loaded.write(name, EXAMPLES[name])
    else:
        await loaded.read(name, EXAMPLES[name])
    assert loaded.stats[name].errors == 0
