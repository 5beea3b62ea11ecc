"""Live state on real stores: a NIC port down keeps its GPU out of multi-host jobs; exclusive jobs skip busy GPUs."""

from __future__ import annotations

from typing import Any

import httpx
from topo_facts.models import PortState

from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load

Q = """query($t: String!) { placementText(text: $t) {
  candidates { gpus { uuid host { name } utilizationPct } } infeasible { constraint } } }"""


async def place(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    body = (await client.post("/graphql", json={"query": Q, "variables": {"t": text}})).json()
    assert "errors" not in body, body
    out: dict[str, Any] = body["data"]["placementText"]
    return out


async def test_a_nic_down_keeps_its_gpu_out_of_multi_host_jobs(client: httpx.AsyncClient, gateway: Gateway) -> None:
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=9)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = c.hosts[:2]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    host = c.hosts[0]
    down_nic = host.gpu_nic_affinity[0].nic
    nics = [n.model_copy(update={"state": PortState.DOWN}) if n.name == down_nic else n for n in host.nics]
    c.hosts[0] = host.model_copy(update={"nics": nics})
    await load(gateway, c)
    cut = host.gpu_nic_affinity[0].gpu_uuid
    for text in ("12 limit=5", "10 limit=5", "9 limit=5"):
        result = await place(client, text)
        used = {g["uuid"] for cand in result["candidates"] for g in cand["gpus"]}
        assert cut not in used, text
    one_host = await place(client, "1 limit=20")  # a single-GPU job needs no rail
    assert one_host["candidates"]


async def test_exclusive_jobs_get_idle_gpus_only(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    result = await place(client, "4 exclusive limit=5")
    utils = [g["utilizationPct"] for cand in result["candidates"] for g in cand["gpus"]]
    assert utils and all(u is None or u < 10 for u in utils)
