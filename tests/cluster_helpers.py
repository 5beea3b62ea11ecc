"""Loading synthetic clusters through the real ingest path, and occupying GPUs, for placement tests."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

from topo_facts.models import Health, PortState

from graphsvc.ingest.service import recount
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from graphsvc.synthetic.load import load_cluster
from tests.queries import with_test_queries

load = load_cluster
_ticks = itertools.count(1)


def one_unit(hosts: int, seed: int) -> SyntheticCluster:
    """The first `hosts` HGX H100 hosts of one rail-optimised unit (8 GPUs and 8 rails a host, one
    leaf per rail, spines): host, domain and leaf counters all present, small enough to read whole."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=seed)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = c.hosts[:hosts]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    return c


def later() -> datetime:
    """A collection time after every one this process made before: the store ignores facts older
    than those it holds, so each document a test sends must be newer than the last."""
    return datetime.now(UTC) + timedelta(milliseconds=next(_ticks))


async def occupy(gw: Gateway, uuids: list[str], state: str = "reserved") -> None:
    """Mark GPUs taken (as a reservation would) and bring the free counters up to date."""
    if not uuids:
        return
    rows = await gw.write("set_gpu_state", {"uuids": uuids, "state": state})
    await recount(gw, list(rows[0]["hosts"]))


async def fail_gpu(gw: Gateway, uuid: str) -> None:
    """Mark a held GPU failed in place, with its host's impaired_gpus recounted as every production
    write of a GPU's health recounts it (tests/queries/gpu_fail), so counter_drift stays empty."""
    assert await with_test_queries(gw).write("gpu_fail", {"uuid": uuid}), f"no GPU {uuid}"


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
