"""Loading synthetic clusters through the real ingest path, and occupying GPUs, for placement tests."""

from __future__ import annotations

from graphsvc.ingest.service import recount
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.load import load_cluster

load = load_cluster


async def occupy(gw: Gateway, uuids: list[str], state: str = "reserved") -> None:
    """Mark GPUs taken (as a reservation would) and bring the free counters up to date."""
    if not uuids:
        return
    rows = await gw.write("set_gpu_state", {"uuids": uuids, "state": state})
    await recount(gw, list(rows[0]["hosts"]))
