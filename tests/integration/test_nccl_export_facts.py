"""The NCCL topology export against real dumps: what NCCL would read from it, and what comes back.

NCCL takes an attribute that is present as the truth (xml.cc): `sm="0"` turned off its NVML
NVLink detection on Azure's H100 and A100 VMs, and an empty `<system/>` for a host imported from
`nvidia-smi topo -m` held no GPU at all. docs/integrations.md ("NCCL") lists what an export read
back with `topo-collector import` keeps; `test_the_round_trip_keeps_what_the_docs_say` holds it
to that list, on real dumps and on every demo host type.
"""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from topo_collector.importers import ImportOptions, import_hosts, parse_nccl_xml
from topo_collector.importers.common import COMPUTE_CAPABILITY
from topo_facts import HostFacts, PortState
from topo_facts.gpu_models import table

from graphsvc.cli import main
from graphsvc.placement.capabilities import FAMILIES
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.faults.live import serving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"
H100 = "NVIDIA H100 80GB HBM3"
DUMPS: dict[str, tuple[str, dict[str, Any]]] = {
    "oci-h100": ("oci-bm-gpu-h100-8.nccl.xml", {}),
    "aws-p5": ("aws-p5-48xlarge.nccl.xml", {}),
    "az-h100": ("azure-nd-h100-v5.nccl.xml", {"gpu_model": H100}),
    "az-a100": ("azure-nd-a100-v4.nccl.xml", {"gpu_model": "NVIDIA A100-SXM4-80GB"}),
    "dgx2": ("dgx2.hwloc.xml", {}),
    "mi300x": ("mi300x-like.rccl.xml", {}),
    "smi-h100": ("h100-8gpu.nvidia-smi-topo-m.txt", {"gpu_model": H100}),
}
# What docs/integrations.md says an export read back does not keep (NCCL's format has no place
# for it): paths as `diff` writes them, list positions left out.
NOT_KEPT = {
    ".cpu_model",
    ".numa_nodes[].memory_mib",
    ".nics[].netdev",
    ".gpus[].nvlink_domain",  # comes back with --nvlink-domain; not compared here
    ".gpus[].mig_mode",
    # health and load, which the collector sends every minute anyway
    ".gpus[].health",
    ".gpus[].temperature_c",
    ".gpus[].power_w",
    ".gpus[].utilization_pct",
    ".gpus[].memory_used_mib",
    ".gpus[].ecc_uncorrected",
    ".gpus[].retired_pages",
}


def facts_for(dump: str, **extra: Any) -> HostFacts:
    """The dump's host, named as DUMPS names it unless `host=` says otherwise."""
    file, opts = DUMPS[dump]
    return import_hosts(FIXTURES / file, ImportOptions(**{"host": dump, **opts, **extra})).hosts[0]


async def put(client: httpx.AsyncClient, facts: HostFacts) -> None:
    resp = await client.put(
        f"/v1/hosts/{facts.hostname}/facts",
        content=facts.model_dump_json(),
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 200, resp.text


async def export(client: httpx.AsyncClient, host: str) -> str:
    resp = await client.get("/v1/export/nccl", params={"host": host})
    assert resp.status_code == 200, resp.text
    return resp.text


def gpu_elements(xml: str) -> list[ET.Element]:
    return ET.fromstring(xml).findall(".//gpu")


def canon(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: canon(v) for k, v in x.items()}
    if isinstance(x, list):
        items = [canon(v) for v in x]
        if items and all(isinstance(v, dict) for v in items):
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return x


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        out = [f"{path}: {len(a)} items != {len(b)}"] if len(a) != len(b) else []
        return out + [d for i, (x, y) in enumerate(zip(a, b, strict=False)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def comparable(f: HostFacts) -> Any:
    d = json.loads(f.model_dump_json())
    for k in ("collected_at", "collector_version"):
        d.pop(k)
    return canon(d)


# -- sm: the real value, or none -----------------------------------------------------------


def test_importers_fill_the_compute_capability_from_the_model() -> None:
    """A file that names the model (or --gpu-model does) but no SM: the model's compute capability."""
    assert {g.compute_capability for g in facts_for("az-h100").gpus} == {"9.0"}
    assert {g.compute_capability for g in facts_for("az-a100").gpus} == {"8.0"}
    assert {g.compute_capability for g in facts_for("dgx2").gpus} == {"7.0"}  # hwloc: the PCI id's V100
    assert {g.compute_capability for g in facts_for("smi-h100").gpus} == {"9.0"}
    assert {g.compute_capability for g in facts_for("mi300x").gpus} == {None}  # AMD has none
    assert {g.compute_capability for g in facts_for("az-h100", gpu_model=None).gpus} == {None}  # unnamed


def test_the_importers_table_agrees_with_placement() -> None:
    """Two copies of one fact (the collector cannot import graphsvc): every NVIDIA family of the
    model table has the same compute capability in both."""
    nvidia = {r.family.lower() for r in table() if r.vendor_name == "nvidia"}
    for family in nvidia:
        cc = FAMILIES[family].compute_capability
        assert COMPUTE_CAPABILITY.get(family) == (f"{cc[0]}.{cc[1]}" if cc else None), family


@pytest.mark.parametrize(("host", "sm"), [("az-h100", "90"), ("az-a100", "80"), ("dgx2", "70")])
async def test_sm_is_the_gpus_or_its_models(client: httpx.AsyncClient, host: str, sm: str) -> None:
    """Facts sent without a compute capability (an importer before it filled one in, a client's
    own document): the model's, never 0, which NCCL would take for a pre-Volta GPU."""
    f = facts_for(host)
    f = f.model_copy(update={"gpus": [g.model_copy(update={"compute_capability": None}) for g in f.gpus]})
    await put(client, f)
    assert {g.get("sm") for g in gpu_elements(await export(client, host))} == {sm}


async def test_sm_is_left_out_where_nothing_knows_it(client: httpx.AsyncClient) -> None:
    """An unknown model without a compute capability, and AMD GPUs: no `sm`, so NCCL (RCCL) asks
    the GPU itself."""
    await put(client, facts_for("az-h100", host="az-x", gpu_model="Acme X1"))
    await put(client, facts_for("mi300x"))
    for host in ("az-x", "mi300x"):
        gpus = gpu_elements(await export(client, host))
        assert gpus and all("sm" not in g.attrib for g in gpus), host


async def test_the_gpus_pci_ids_and_the_cpus_arch_are_written_when_known(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    await put(client, facts_for("az-h100"))
    await put(client, facts_for("dgx2"))
    await load(gateway, "demo:sus=0,nvl72_racks=1,a100_hosts=0,l40s_hosts=0")
    az = ET.fromstring(await export(client, "az-h100"))
    pci = [p for p in az.iter("pci") if p.find("gpu") is not None]
    assert {(p.get("vendor"), p.get("device")) for p in pci} == {("0x10de", "0x2330")}
    assert all("arch" not in c.attrib for c in az.iter("cpu"))  # the CPU is unknown: NCCL fills it in
    dgx2 = ET.fromstring(await export(client, "dgx2"))
    assert {(c.get("arch"), c.get("vendor")) for c in dgx2.iter("cpu")} == {("x86_64", "GenuineIntel")}
    grace = ET.fromstring(await export(client, "gb200-rack01-t01"))  # not x86_64: NCCL would want its vendor
    assert {(c.get("arch"), c.get("vendor")) for c in grace.iter("cpu")} == {("arm64", None)}


# -- a host whose GPUs have no bus id ------------------------------------------------------


async def test_gpus_without_a_bus_id_are_refused(app: FastAPI, client: httpx.AsyncClient, tmp_path: Path) -> None:
    """`nvidia-smi topo -m` names no PCI bus ids: the export was `<system version="1" />`."""
    await put(client, facts_for("smi-h100"))
    resp = await client.get("/v1/export/nccl", params={"host": "smi-h100"})
    assert resp.status_code == 409, resp.text
    message = resp.json()["error"]
    assert "host 'smi-h100'" in message and "PCI bus ids" in message and "collector or importer" in message
    async with serving(app) as hostport:
        out, err = tmp_path / "out", tmp_path / "err"

        def run() -> int:
            import contextlib

            with out.open("w") as o, err.open("w") as e, contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                return main(["export", "nccl", "--host", "smi-h100", "--server", f"http://{hostport}"])

        assert await asyncio.to_thread(run) == 1
    assert out.read_text() == ""
    assert "HTTP 409" in err.read_text() and "PCI bus ids" in err.read_text()


# -- the round trip ------------------------------------------------------------------------


async def test_the_round_trip_keeps_what_the_docs_say(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """Every real dump (and one host of each demo type) exported and imported back: the same
    facts, but for what the docs list as not kept."""
    demo = await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=1,l40s_hosts=1")
    kinds: dict[str, HostFacts] = {}
    for h in demo.hosts:
        kinds.setdefault(h.hostname.split("-")[0], h)
    hosts = list(kinds.values())
    for name in DUMPS:
        if name != "smi-h100":
            hosts.append(facts_for(name))
            await put(client, hosts[-1])
    for f in hosts:
        opts = ImportOptions(host=f.hostname, cluster=f.cluster, rack=f.rack, scalable_unit=f.scalable_unit)
        back = parse_nccl_xml(await export(client, f.hostname), opts)
        found = differences(comparable(f), comparable(back))
        assert {re.sub(r"\[\d+\]", "[]", d.split(":")[0]) for d in found} <= NOT_KEPT, (f.hostname, found[:10])
    dgx2 = next(f for f in hosts if f.hostname == "dgx2")
    back = parse_nccl_xml(await export(client, "dgx2"), ImportOptions(host="dgx2"))
    # NVLink 2 at 50 GB/s per link came back as 0 GB/s of an unknown generation (sm="0").
    assert {(x.links, x.bandwidth_gbps, x.generation) for g in back.gpus for x in g.nvlinks} == {(1, 50.0, 2)}
    assert len(back.pcie_switches) == len(dgx2.pcie_switches) == 18  # switches with no GPU or NIC too


async def test_a_nic_keeps_its_state(client: httpx.AsyncClient) -> None:
    """Azure's NICs are only PCI functions (state unknown): written as the bare `<pci>` they came
    from, not as a `<net>` NCCL would take for a port in use. A named port that is down says so."""
    await put(client, facts_for("az-h100"))
    az = ET.fromstring(await export(client, "az-h100"))
    assert az.find(".//nic") is None and len([p for p in az.iter("pci") if p.get("class") == "0x020700"]) == 8
    f = facts_for("oci-h100")
    down = f.nics[0].name
    f = f.model_copy(update={"nics": [f.nics[0].model_copy(update={"state": PortState.DOWN}), *f.nics[1:]]})
    await put(client, f)
    back = parse_nccl_xml(await export(client, "oci-h100"), ImportOptions(host="oci-h100"))
    assert {n.name: n.state for n in back.nics} == {n.name: n.state for n in f.nics}
    assert {n.name: n.state for n in back.nics}[down] is PortState.DOWN


async def test_an_unknown_numa_node_is_minus_one(client: httpx.AsyncClient) -> None:
    """Devices whose NUMA node is unknown hang off `<cpu numaid="-1">`, as NCCL writes them: 0
    said they were node 0's, and the import back made up a NUMA node 0."""
    f = facts_for("oci-h100")
    f = f.model_copy(
        update={
            "numa_nodes": [],
            "gpus": [g.model_copy(update={"numa_node": None}) for g in f.gpus],
            "nics": [n.model_copy(update={"numa_node": None}) for n in f.nics],
            "pcie_switches": [s.model_copy(update={"numa_node": None}) for s in f.pcie_switches],
        }
    )
    await put(client, f)
    xml = await export(client, "oci-h100")
    assert [c.get("numaid") for c in ET.fromstring(xml).iter("cpu")] == ["-1"]
    back = parse_nccl_xml(xml, ImportOptions(host="oci-h100"))
    assert back.numa_nodes == [] and {g.numa_node for g in back.gpus} == {None}
