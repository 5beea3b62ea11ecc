"""Imported real and spec-written topology files, placed on the real store (issue 14).

The acceptance check of issue 14 runs end to end in `test_place_cli_on_a_two_tray_import`:
`topo-collector import` sends a two-tray NVL72 dump to a running service and
`graphsvc place "8xGB200 nvlink=full-mesh"` answers with both trays.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from topo_collector.importers import ImportOptions, import_hosts

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from tests.service import ServiceProcess

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


async def push_file(client: httpx.AsyncClient, name: str, **opts: object) -> list[str]:
    result = import_hosts(FIXTURES / name, ImportOptions(**opts))  # type: ignore[arg-type]
    for facts in result.hosts:
        resp = await client.put(
            f"/v1/hosts/{facts.hostname}/facts",
            content=facts.model_dump_json(),
            headers={"content-type": "application/json"},
        )
        assert resp.status_code == 200, resp.text
    return [f.hostname for f in result.hosts]


async def test_full_mesh_across_two_nvl72_trays_of_one_dump(client: httpx.AsyncClient, gateway: Gateway) -> None:
    trays = await push_file(client, "nvl72-two-trays.nccl.xml", host="x", rack="r1", host_pattern="r1-t{n}")
    engine = PlacementEngine(gateway)
    r = await engine.place(parse_request("8xGB200 nvlink=full-mesh"))
    assert r.candidates, r.infeasible
    best = r.candidates[0]
    assert sorted(h.name for h in best.hosts) == trays and best.bottleneck_gbps == 1800.0
    # B200 is not GB200, and a ninth GPU does not exist.
    assert not (await engine.place(parse_request("8xB200 nvlink=full-mesh"))).candidates
    assert not (await engine.place(parse_request("9xGB200 nvlink=full-mesh"))).candidates


async def test_full_mesh_over_xgmi(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await push_file(client, "mi300x-like.rccl.xml", host="mi-1")
    await push_file(client, "mi300x-like.rocm-smi-showtopo.txt", host="mi-2", gpu_model="AMD Instinct MI300X")
    engine = PlacementEngine(gateway)
    r = await engine.place(parse_request("8xMI300X nvlink=full-mesh mem>=192 limit=5"))
    assert sorted(c.hosts[0].name for c in r.candidates) == ["mi-1", "mi-2"]
    assert {c.bottleneck_gbps for c in r.candidates} == {128.0}
    four = await engine.place(parse_request("4xMI300X nvlink=full-mesh"))
    assert four.candidates and len(four.candidates[0].hosts) == 1


async def test_memory_comes_from_the_pci_id(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await push_file(client, "oci-bm-gpu-h100-8.nccl.xml", host="oci")
    engine = PlacementEngine(gateway)
    assert (await engine.place(parse_request("8xH100 nvlink=full-mesh mem>=80"))).candidates
    assert not (await engine.place(parse_request("8xH100 mem>=81"))).candidates


@pytest.mark.slow
def test_place_cli_on_a_two_tray_import(tmp_path: Path) -> None:
    graphsvc, collector = shutil.which("graphsvc"), shutil.which("topo-collector")
    assert graphsvc and collector, "console scripts are not installed"
    service = ServiceProcess(tmp_path / "data")
    service.start()
    try:
        sent = subprocess.run(
            [collector, "import", str(FIXTURES / "nvl72-two-trays.nccl.xml"), "--host-pattern", "nvl72-r01-t{n:02d}",
             "--rack", "nvl72-r01", "--server", service.url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        place = subprocess.run(
            [graphsvc, "place", "8xGB200 nvlink=full-mesh", "--server", service.url, "--json"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert place.returncode == 0, place.stderr + place.stdout
        best = json.loads(place.stdout)["candidates"][0]
        assert sorted(h["name"] for h in best["hosts"]) == ["nvl72-r01-t01", "nvl72-r01-t02"]
        assert len(best["gpus"]) == 8 and best["bottleneckGbps"] == 1800.0
    finally:
        service.stop()


async def test_gres_names_amd_render_nodes(client: httpx.AsyncClient, gateway: Gateway) -> None:
    await push_file(client, "mi300x-like.rccl.xml", host="mi-1")
    await push_file(client, "oci-bm-gpu-h100-8.nccl.xml", host="oci")
    resp = await client.get("/v1/export/slurm-gres")
    assert resp.status_code == 200, resp.text
    files: dict[str, list[str]] = {}
    for line in resp.text.splitlines():
        if line.startswith("NodeName="):
            fields = dict(part.split("=", 1) for part in line.split())
            files.setdefault(fields["NodeName"], []).append(fields["File"])
    assert files["mi-1"] == [f"/dev/dri/renderD{128 + i}" for i in range(8)]
    assert files["oci"] == [f"/dev/nvidia{i}" for i in range(8)]
    mi = [line for line in resp.text.splitlines() if line.startswith("NodeName=mi-1")]
    assert "Links=-1,1,1,1,1,1,1,1" in mi[0]  # one xGMI link to each peer


async def test_graphql_says_accelerator_vendor_and_scale_up_domain(client: httpx.AsyncClient) -> None:
    await push_file(client, "mi300x-like.rccl.xml", host="mi-1")
    query = '{ host(name: "mi-1") { gpus { vendor scaleUpDomain nvlinkDomain } } }'
    resp = await client.post("/graphql", json={"query": query})
    body = resp.json()
    assert resp.status_code == 200 and "errors" not in body, body
    gpus = body["data"]["host"]["gpus"]
    assert {g["vendor"] for g in gpus} == {"amd"}
    assert {g["scaleUpDomain"] for g in gpus} == {g["nvlinkDomain"] for g in gpus} == {"mi-1/nvlink/0"}


async def test_nvml_trays_of_one_clique_share_a_domain_across_hosts(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:

    from topo_collector.collect import build_host_facts
    from topo_collector.nvml import read_nvml
    from topo_collector.nvml_api import ReplayNvml
    from topo_collector.sysfs import SysfsInventory

    calls = json.loads((FIXTURES.parent / "nvml" / "gb200-tray.json").read_text())["calls"]
    for tray in (1, 2):
        # The same recorded tray twice, as its rack neighbour would answer: own GPU uuids, same clique.
        mine = {k: (v.replace("-b0000", f"-b{tray:04d}") if k.startswith("uuid(") else v) for k, v in calls.items()}
        facts = build_host_facts(f"tray-{tray}", read_nvml(ReplayNvml(mine)), SysfsInventory(), rack="nvl72-r1")
        resp = await client.put(f"/v1/hosts/{facts.hostname}/facts", content=facts.model_dump_json(),
                                headers={"content-type": "application/json"})  # fmt: skip
        assert resp.status_code == 200, resp.text
    domains = await gateway.read("nvlink_domains")
    assert [(r["kind"], r["members"]) for r in domains] == [("fabric-clique", 8)]
    r = await PlacementEngine(gateway).place(parse_request("8xGB200 nvlink=full-mesh"))
    assert r.candidates and sorted(h.name for h in r.candidates[0].hosts) == ["tray-1", "tray-2"]


async def test_rccl_export_round_trip(client: httpx.AsyncClient) -> None:
    from topo_collector.importers import parse_nccl_xml

    await push_file(client, "mi300x-like.rccl.xml", host="mi-1")
    resp = await client.get("/v1/export/nccl", params={"host": "mi-1"})
    assert resp.status_code == 200 and "<xgmi " in resp.text and "<nvlink " not in resp.text
    back = parse_nccl_xml(resp.text, ImportOptions(host="mi-1"))
    assert {(g.model, g.memory_mib) for g in back.gpus} == {("AMD Instinct MI300X", 192 * 1024)}
    assert all(sorted((x.links, x.bandwidth_gbps) for x in g.nvlinks) == [(1, 128.0)] * 7 for g in back.gpus)


async def test_a_real_h200_from_its_nvml_recording_places(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """The answers real NVML gave on a lent H200 VM (tests/collectors/test_real_h200.py), end to end."""
    from topo_collector.collect import build_host_facts
    from topo_collector.nvml import read_nvml
    from topo_collector.nvml_api import ReplayNvml
    from topo_collector.sysfs import NumaNode, SysfsInventory

    nvml = read_nvml(ReplayNvml.load(FIXTURES.parent / "nvml" / "h200-vm.json"))
    facts = build_host_facts("h200-vm", nvml, SysfsInventory(numa=[NumaNode(0, "0-15", 128869)]))
    resp = await client.put(
        "/v1/hosts/h200-vm/facts", content=facts.model_dump_json(), headers={"content-type": "application/json"}
    )
    assert resp.status_code == 200, resp.text
    engine = PlacementEngine(gateway)
    r = await engine.place(parse_request("1xH200 mem>=140"))
    assert [(c.hosts[0].name, [g.uuid for g in c.hosts[0].gpus]) for c in r.candidates] == [
        ("h200-vm", ["GPU-4c39815b-4f05-5f36-dc17-871cf534ce20"])
    ]
    assert not (await engine.place(parse_request("2xH200"))).candidates
    assert not (await engine.place(parse_request("1xH100"))).candidates
