"""Live state on real stores: a NIC port down keeps its GPU out of multi-host jobs; exclusive jobs skip busy GPUs."""

from __future__ import annotations

from typing import Any

import httpx
from topo_facts.models import Health, PortState

from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_spines, add_superpod_h100
from tests.cluster_helpers import load

Q = """query($t: String!) { placementText(text: $t) {
  candidates { gpus { uuid host { name } utilizationPct } } infeasible { constraint } } }"""


def two_healthy_hosts(seed: int) -> SyntheticCluster:
    """Two equal DGX H100 hosts of one SuperPOD unit, every GPU healthy, with their leaves and spines."""
    c = SyntheticCluster("default")
    leaves = add_superpod_h100(c, 1, seed=seed)
    add_spines(c, leaves, prefix="spine", sus=1)
    c.hosts = [
        h.model_copy(update={"gpus": [g.model_copy(update={"health": Health.OK}) for g in h.gpus]}) for h in c.hosts[:2]
    ]
    kept = {h.hostname for h in c.hosts}
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    return c


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


async def test_error_counters_are_stored_and_rank_a_clean_host_first(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """#17: NVLink error counters and XIDs arrive by metrics, NIC port counters by full facts;
    both stay in the graph, and placement ranks the host without errors above an equal one."""
    from datetime import UTC, datetime, timedelta

    from topo_facts import HostMetrics
    from topo_facts.models import GPUMetrics

    from graphsvc.ingest.service import ingest_metrics

    c = two_healthy_hosts(seed=5)
    first, second = c.hosts
    nics = [n.model_copy(update={"symbol_errors": 7, "link_downed": 1}) for n in first.nics]
    c.hosts[0] = first.model_copy(update={"nics": nics})
    await load(gateway, c)
    # Equal hosts: the clean one comes first whichever it is.
    for noisy, clean, update in (
        (first, second, {"xid_errors": [13]}),
        (second, first, {"nvlink_replay_errors": 4, "nvlink_crc_errors": 2}),
    ):
        later = datetime.now(UTC) + timedelta(seconds=1)
        for host, fields in ((clean, {}), (noisy, update)):
            gpus = [GPUMetrics(uuid=g.uuid, health="ok", **fields) for g in host.gpus]
            await ingest_metrics(gateway, HostMetrics(hostname=host.hostname, collected_at=later, gpus=gpus))
        result = await place(client, "8xH100 limit=5")
        hosts = [{g["host"]["name"] for g in cand["gpus"]} for cand in result["candidates"]]
        assert hosts[:2] == [{clean.hostname}, {noisy.hostname}], hosts
    rows = await gateway.read("placement_host_gpus", {"hosts": [first.hostname, second.hostname]})
    by_host = {h: [r for r in rows if r["host"] == h] for h in (first.hostname, second.hostname)}
    assert all(r["xid_errors"] == 0 and r["nvlink_errors"] == 6 for r in by_host[second.hostname])
    assert all(r["nic_errors"] == 8 for r in by_host[first.hostname] if r["nic"] is not None)


async def test_exclusive_jobs_skip_gpus_whose_memory_is_held_outside(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """#17: an idle-looking GPU (0% utilisation) whose memory a process outside the service holds is
    not free for an exclusive job; a shared job may still take it."""
    from datetime import UTC, datetime, timedelta

    from topo_facts import HostMetrics
    from topo_facts.models import GPUMetrics

    from graphsvc.ingest.service import ingest_metrics

    c = two_healthy_hosts(seed=7)
    kept = {h.hostname for h in c.hosts}
    await load(gateway, c)
    held, idle = c.hosts
    later = datetime.now(UTC) + timedelta(seconds=1)
    for host, used in ((held, 60_000), (idle, 500)):
        gpus = [GPUMetrics(uuid=g.uuid, health="ok", utilization_pct=0.0, memory_used_mib=used) for g in host.gpus]
        await ingest_metrics(gateway, HostMetrics(hostname=host.hostname, collected_at=later, gpus=gpus))
    exclusive = await place(client, "8xH100 exclusive limit=5")
    assert [{g["host"]["name"] for g in cand["gpus"]} for cand in exclusive["candidates"]] == [{idle.hostname}]
    shared = await place(client, "8xH100 limit=5")
    assert {n for cand in shared["candidates"] for n in {g["host"]["name"] for g in cand["gpus"]}} == kept
