"""Loading synthetic clusters through the real ingest path, and occupying GPUs, for placement tests."""

from __future__ import annotations

from graphsvc.ingest.service import ingest_fabric, ingest_host, recount
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, build


async def load(gw: Gateway, profile: str | SyntheticCluster) -> SyntheticCluster:
    cluster = build(profile) if isinstance(profile, str) else profile
    for host in cluster.hosts:
        await ingest_host(gw, host)
    if cluster.switches:
        await ingest_fabric(gw, cluster.fabric())
    return cluster


async def occupy(gw: Gateway, uuids: list[str], state: str = "reserved") -> None:
    """Mark GPUs taken (as a reservation would) and bring the free counters up to date."""
    if not uuids:
        return
    rows = await gw.write("set_gpu_state", {"uuids": uuids, "state": state})
    await recount(gw, list(rows[0]["hosts"]))
