"""Imported and collected facts pushed to the service produce the right graph."""

from __future__ import annotations

from pathlib import Path

import httpx
from topo_collector.collect import build_host_facts
from topo_collector.importers import ImportOptions, import_hosts
from topo_collector.nvml import read_nvml
from topo_collector.nvml_api import ReplayNvml
from topo_collector.sysfs import read_sysfs
from topo_facts import HostFacts

from graphsvc.store.gateway import Gateway

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def push(client: httpx.AsyncClient, facts: HostFacts) -> None:
    resp = await client.put(
        f"/v1/hosts/{facts.hostname}/facts",
        content=facts.model_dump_json(),
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 200, resp.text


async def test_every_fixture_lands_as_a_correct_graph(client: httpx.AsyncClient, gateway: Gateway) -> None:
    expected_gpus: dict[str, int] = {}
    for f in sorted((FIXTURES / "topology").glob("*.*")):
        if f.suffix not in (".xml", ".txt"):
            continue
        host = f.name.split(".")[0]
        if any(h.startswith(host) for h in expected_gpus):  # mi300x-like.rccl.xml, mi300x-like.amd-smi-...
            host += "-" + f.name.split(".")[1]
        for facts in import_hosts(
            f, ImportOptions(host=host, host_pattern=f"{host}-t{{n}}" if "trays" in host else None)
        ).hosts:
            await push(client, facts)
            expected_gpus[facts.hostname] = len(facts.gpus)
    for host, n in expected_gpus.items():
        body = (await client.get(f"/v1/hosts/{host}")).json()
        assert len(body["gpus"]) == n, host
    domains = {r["uuid"]: r["members"] for r in await gateway.read("nvlink_domains")}
    assert domains["oci-bm-gpu-h100-8/nvlink/0"] == 8
    assert domains["h100-8gpu/nvlink/0"] == 8
    assert sorted(v for k, v in domains.items() if k.startswith("dgx2/")) == [8, 8]
    nics = await gateway.read("host_gpu_nics", {"hosts": ["oci-bm-gpu-h100-8"]})
    assert [(r["gpu"], r["nic"], r["via"]) for r in nics][:2] == [
        (0, "mlx5_0", "pcie-switch"),
        (1, "mlx5_3", "pcie-switch"),
    ]
    azure = await gateway.read("host_gpu_nics", {"hosts": ["azure-nd-h100-v5"]})
    assert [r["rail"] for r in azure] == list(range(8))
    # The two NVL72 trays of one dump: one NVLink domain of 8 GPUs across both hosts.
    fabric = [(k, v) for k, v in domains.items() if "nvlink-fabric" in k]
    assert [v for _, v in fabric] == [8]
    assert [v for k, v in domains.items() if k.startswith("mi300x-like")] == [8, 8, 8]  # RCCL, rocm-smi, amd-smi


async def test_collected_facts_land(client: httpx.AsyncClient, gateway: Gateway) -> None:
    inv = read_nvml(ReplayNvml.load(FIXTURES / "nvml" / "gb200-tray.json"))
    facts = build_host_facts("tray-1", inv, read_sysfs(), rack="nvl72-r1")
    await push(client, facts)
    body = (await client.get("/v1/hosts/tray-1")).json()
    assert body["rack"] == "nvl72-r1"
    # The clique NVML reports, named within the host's cluster (graphsvc.ingest.host_plan.fabric_domain).
    clique = "default/fabric/5e1c2b3a-9f8e-4d7c-8b6a-112233445566/32766"
    assert {g["nvlink_domain"] for g in body["gpus"]} == {clique}
    assert [(r["uuid"], r["kind"], r["members"]) for r in await gateway.read("nvlink_domains")] == [
        (clique, "fabric-clique", 4)
    ]
