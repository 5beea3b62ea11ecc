"""Loading synthetic clusters through the real ingest path, and occupying GPUs, for placement tests."""

from __future__ import annotations

import random

from topo_facts.models import Health, PortState

from graphsvc.ingest.service import recount
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster
from graphsvc.synthetic.load import load_cluster
from tests.queries import with_test_queries

load = load_cluster


async def occupy(gw: Gateway, uuids: list[str], state: str = "reserved") -> None:
    """Mark GPUs taken (as a reservation would) and bring the free counters up to date."""
    if not uuids:
        return
    rows = await gw.write("set_gpu_state", {"uuids": uuids, "state": state})
    await recount(gw, list(rows[0]["hosts"]))


def worn(cluster: SyntheticCluster, rng: random.Random) -> None:
    """Some GPUs degraded, failed or hot, some NIC ports down: what the counts must judge alike."""
    hosts = []
    for host in cluster.hosts:
        gpus = [
            g.model_copy(
                update={
                    "health": rng.choice([Health.OK] * 6 + [Health.DEGRADED, Health.FAILED, Health.UNKNOWN]),
                    "temperature_c": rng.choice([None, 45.0, 65.0, 85.0]),
                }
            )
            for g in host.gpus
        ]
        ports = [PortState.ACTIVE] * 4 + [PortState.DOWN]
        nics = [n.model_copy(update={"state": rng.choice(ports)}) for n in host.nics]
        hosts.append(host.model_copy(update={"gpus": gpus, "nics": nics}))
    cluster.hosts = hosts


async def load_worn(gw: Gateway, cluster: SyntheticCluster, rng: random.Random, occupancy: float) -> None:
    """A fresh graph holding `cluster` worn (`worn`), with about `occupancy` of its GPUs taken: the
    random clusters the oracle tests (counts, probes and the diagnosis's shortcuts against the
    search) compare answers on. `rng` draws the wear, then the GPUs taken."""
    await with_test_queries(gw).write("reset_graph")
    worn(cluster, rng)
    await load(gw, cluster)
    await occupy(gw, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < occupancy])
