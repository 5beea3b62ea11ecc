"""What ingest writes is what schema/graph.toml declares: labels, keys, types, relationship ends."""

from __future__ import annotations

from topo_facts import MigSliceFact

from graphsvc.ingest.service import ingest_fabric, ingest_host
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.sites.catalog import EXAMPLE_PRICES, SiteCatalog, load_price_file
from graphsvc.sites.store import put_facts, put_sites
from graphsvc.store.gateway import Gateway
from graphsvc.store.schema import graph_schema
from graphsvc.synthetic.clusters import build

PY_TYPES = {
    "string": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "list<string>": (list,),
    "list<int>": (list,),
}


async def test_stored_graph_conforms_to_declared_schema(gateway: Gateway) -> None:
    cluster = build("demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    # One GPU in MIG mode with two slices (MigSlice, HAS_SLICE), one of them reserved (HOLDS_SLICE).
    mig = cluster.hosts[1].gpus[0]
    slices = [MigSliceFact(uuid=f"MIG-conf-{n}", gpu_instance_id=n + 1, profile="3g.40gb", memory_mib=40448)
              for n in range(2)]  # fmt: skip
    cluster.hosts[1] = cluster.hosts[1].model_copy(
        update={"gpus": [mig.model_copy(update={"mig_mode": True, "mig_slices": slices}), *cluster.hosts[1].gpus[1:]]}
    )
    for host in cluster.hosts:
        await ingest_host(gateway, host)
    await ingest_fabric(gateway, cluster.fabric())
    reserved = await ReservationService(gateway).reserve(
        holder="conformance", request=parse_request("2xH100"), labels=["team=infra"]
    )
    assert isinstance(reserved, Reservation)
    sliced = await ReservationService(gateway).reserve(holder="conformance", request=parse_request("1x 3g.40gb"))
    assert isinstance(sliced, Reservation) and len(sliced.slices) == 1
    # Sites (docs/sites.md): a site owning the cluster, a link, and the example price file.
    catalog = SiteCatalog.model_validate(
        {
            "sites": [
                {"name": "dc", "kind": "on-prem", "capacity_kinds": ["owned"], "clusters": ["default"]},
                {"name": "cloud", "kind": "cloud-region", "capacity_kinds": ["spot"], "spot_preemption_per_h": 0.1},
            ],
            "links": [{"a": "dc", "b": "cloud", "bandwidth_gbps": 12.5, "latency_ms": 80.0}],
        }
    )
    await put_sites(gateway, catalog, 1.0)
    await put_facts(gateway, load_price_file(EXAMPLE_PRICES).all_facts(), 1.0)
    schema = graph_schema()
    seen_labels: set[str] = set()
    for row in await gateway.read("export_nodes", {"limit": 1_000_000}):
        (label,) = row["labels"]
        seen_labels.add(label)
        node = schema.nodes[label]
        for prop, value in row["props"].items():
            assert prop in node.properties, f"{label}.{prop} is not declared"
            assert isinstance(value, PY_TYPES[node.properties[prop]]), f"{label}.{prop}={value!r}"
        missing = [p for p in node.required if p not in row["props"]]
        assert not missing, f"{label} lacks required {missing}"
    assert seen_labels == set(schema.nodes)
    seen_types: set[str] = set()
    for row in await gateway.read("export_relationships", {"limit": 1_000_000}):
        rel = schema.relationships[row["type"]]
        seen_types.add(row["type"])
        assert row["from_labels"][0] in rel.sources and row["to_labels"][0] in rel.targets, row
        for prop, value in row["props"].items():
            assert prop in rel.properties, f"{row['type']}.{prop} is not declared"
            assert isinstance(value, PY_TYPES[rel.properties[prop]])
    assert seen_types == set(schema.relationships)
