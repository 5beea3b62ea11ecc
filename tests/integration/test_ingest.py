"""Fact ingest on the real embedded store: idempotent, atomic, hostile-input safe."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from topo_facts import HostFacts, HostMetrics

from graphsvc.ingest.service import ingest_host, ingest_metrics
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.store.schema import GRAPH_VERSION
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load
from tests.helpers import a100, as_json, h100, l40, tray
from tests.queries import with_test_queries
from tests.stores import adhoc

pytestmark = pytest.mark.asyncio


def soon(offset_s: float) -> str:
    """A collected_at newer than facts built just before, within the allowed clock skew (#13.2)."""
    return (datetime.now(UTC) + timedelta(seconds=offset_s)).isoformat()


async def put_host(client: httpx.AsyncClient, data: dict[str, Any]) -> httpx.Response:
    return await client.put(f"/v1/hosts/{data['hostname']}/facts", json=data)


async def snapshot(gw: Gateway) -> dict[str, Any]:
    """Everything in the graph except reception time, in a comparable form."""
    nodes = sorted(
        json.dumps({k: v for k, v in r["props"].items() if k not in ("received_at", "migrated_at")}, sort_keys=True)
        + "|".join(sorted(r["labels"]))
        for r in await gw.read("export_nodes", {"limit": 100_000})
    )
    rels = sorted(json.dumps(r, sort_keys=True) for r in await gw.read("export_relationships", {"limit": 100_000}))
    return {"nodes": nodes, "rels": rels}


async def test_same_facts_twice_change_nothing(client: httpx.AsyncClient, gateway: Gateway) -> None:
    data = as_json(h100())
    assert (await put_host(client, data)).status_code == 200
    first = await snapshot(gateway)
    second_resp = await put_host(client, data)
    assert second_resp.status_code == 200 and second_resp.json()["applied"] is True
    assert await snapshot(gateway) == first
    assert len(first["nodes"]) > 8


async def test_removed_gpu_and_nic_disappear(client: httpx.AsyncClient, gateway: Gateway) -> None:
    data = as_json(h100())
    await put_host(client, data)
    gone_gpu = data["gpus"].pop(7)
    gone_nic = data["nics"].pop(7)
    data["gpu_nic_affinity"] = [a for a in data["gpu_nic_affinity"] if a["gpu_uuid"] != gone_gpu["uuid"]]
    data["collected_at"] = soon(100)
    assert (await put_host(client, data)).status_code == 200
    host = (await client.get("/v1/hosts/node-a")).json()
    assert [g["index"] for g in host["gpus"]] == list(range(7))
    assert gone_nic["name"] not in {n["name"] for n in host["nics"]}
    rows = await gateway.read("gpus_by_uuid", {"uuids": [gone_gpu["uuid"]]})
    assert rows == []


async def test_invalid_device_writes_nothing(client: httpx.AsyncClient, gateway: Gateway) -> None:
    good = as_json(h100("node-a"))
    await put_host(client, good)
    before = await snapshot(gateway)
    bad = as_json(h100("node-a", seed=99))
    bad["collected_at"] = soon(100)
    bad["gpus"][5]["nvlinks"][0]["peer_id"] = "ghost-switch"
    resp = await put_host(client, bad)
    assert resp.status_code == 422
    assert resp.json()["fields"][0]["field"] == "gpus[5].nvlinks[0].peer_id"
    assert await snapshot(gateway) == before
    fresh = as_json(h100("node-b", seed=7))
    fresh["gpus"][2]["memory_mib"] = -1
    resp = await put_host(client, fresh)
    assert resp.status_code == 422
    assert resp.json()["fields"][0]["field"] == "gpus[2].memory_mib"
    assert (await client.get("/v1/hosts/node-b")).status_code == 404


async def test_gpu_owned_by_another_host_is_a_conflict(client: httpx.AsyncClient, gateway: Gateway) -> None:
    a = as_json(h100("node-a", seed=1))
    await put_host(client, a)
    before = await snapshot(gateway)
    b = as_json(h100("node-b", seed=2))
    b["gpus"][0]["uuid"] = a["gpus"][0]["uuid"]
    b["gpu_nic_affinity"][0]["gpu_uuid"] = a["gpus"][0]["uuid"]
    resp = await put_host(client, b)
    assert resp.status_code == 409
    assert resp.json()["detail"][0]["host"] == "node-a"
    assert await snapshot(gateway) == before


async def test_older_facts_do_not_overwrite_newer(client: httpx.AsyncClient) -> None:
    new = as_json(h100())
    new["collected_at"] = soon(200)
    await put_host(client, new)
    old = as_json(h100())
    old["collected_at"] = soon(100)
    old["gpus"][0]["temperature_c"] = 99.0
    resp = await put_host(client, old)
    assert resp.status_code == 200 and resp.json()["applied"] is False
    host = (await client.get("/v1/hosts/node-a")).json()
    assert host["gpus"][0]["temperature_c"] == new["gpus"][0]["temperature_c"]


async def test_url_and_body_host_must_agree(client: httpx.AsyncClient) -> None:
    data = as_json(h100("node-a"))
    resp = await client.put("/v1/hosts/node-b/facts", json=data)
    assert resp.status_code == 422
    assert resp.json()["fields"][0]["field"] == "hostname"


HOSTILE = [
    "x' }) MATCH (n) DETACH DELETE n //",
    'quote"double',
    "back`tick`",
    "$param {a: 1}",
    "MERGE (:Pwned)",
    "\\u0000-escaped",
]


@pytest.mark.parametrize("evil", HOSTILE)
async def test_hostile_strings_are_stored_verbatim(client: httpx.AsyncClient, gateway: Gateway, evil: str) -> None:
    data = as_json(h100())
    data["gpus"][0]["uuid"] = "GPU-" + evil.replace(" ", "_")
    data["gpu_nic_affinity"][0]["gpu_uuid"] = data["gpus"][0]["uuid"]
    data["gpus"][1]["model"] = evil
    data["cpu_model"] = evil + " 漢字 🚀"
    data["nics"][0]["guid"] = evil.replace(" ", "_")
    resp = await put_host(client, data)
    assert resp.status_code == 200, resp.text
    host = (await client.get("/v1/hosts/node-a")).json()
    assert host["cpu_model"] == evil + " 漢字 🚀"
    assert host["gpus"][0]["uuid"] == "GPU-" + evil.replace(" ", "_")
    assert host["gpus"][1]["model"] == evil
    assert host["nics"][0]["guid"] == evil.replace(" ", "_")
    counts = (await gateway.read("health_counts"))[0]
    assert counts["hosts"] == 1  # nothing was deleted or created by the payload


@pytest.mark.parametrize("field", ["hostname", "cluster", "rack", "scalable_unit"])
@pytest.mark.parametrize("evil", ["a'b", "a`b", "a b", "a/b", "a\nb", "名前"])
async def test_hostile_names_are_rejected(client: httpx.AsyncClient, gateway: Gateway, field: str, evil: str) -> None:
    data = as_json(h100())
    data[field] = evil
    resp = await client.put("/v1/hosts/node-a/facts", json=data)
    assert resp.status_code == 422
    assert field in {f["field"] for f in resp.json()["fields"]}
    assert (await gateway.read("health_counts"))[0]["hosts"] == 0


async def test_control_characters_in_text_rejected(client: httpx.AsyncClient) -> None:
    data = as_json(h100())
    data["gpus"][0]["model"] = "H100\x1b[31m"
    resp = await put_host(client, data)
    assert resp.status_code == 422
    assert resp.json()["fields"][0]["field"] == "gpus[0].model"


async def test_10mb_payload_is_refused_before_parsing(client: httpx.AsyncClient, gateway: Gateway) -> None:
    data = as_json(h100())
    data["cpu_model"] = "x" * (10 * 1024 * 1024)
    resp = await put_host(client, data)
    assert resp.status_code == 413
    assert "limit" in resp.json()["message"]

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(11):
            yield b"x" * (1024 * 1024)

    resp = await client.put("/v1/hosts/node-a/facts", content=chunks(), headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert (await gateway.read("health_counts"))[0]["hosts"] == 0


async def test_huge_string_field_rejected_with_short_echo(client: httpx.AsyncClient) -> None:
    data = as_json(h100())
    data["gpus"][0]["model"] = "y" * 100_000
    resp = await put_host(client, data)
    assert resp.status_code == 422
    assert len(resp.text) < 2000


async def test_malformed_json_is_a_4xx(client: httpx.AsyncClient) -> None:
    resp = await client.put(
        "/v1/hosts/node-a/facts",
        content=b'{"hostname": "node-a", ',
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 400  # not JSON at all, as a NaN is not (422: JSON with wrong fields)
    assert resp.json()["error"] == "invalid JSON"


async def test_host_moves_rack(client: httpx.AsyncClient, gateway: Gateway) -> None:
    data = as_json(h100(rack="rack-1"))
    await put_host(client, data)
    data["rack"] = "rack-9"
    data["collected_at"] = soon(100)
    await put_host(client, data)
    host = (await client.get("/v1/hosts/node-a")).json()
    assert host["rack"] == "rack-9"
    rows = await gateway.read("host_racks", {"name": "node-a"})
    assert rows[0]["racks"] == ["rack-9"]


async def test_nvl72_trays_share_one_domain(client: httpx.AsyncClient, gateway: Gateway) -> None:
    for t in range(3):
        assert (await put_host(client, as_json(tray(f"tray-{t}", "c/rack/clique-0", seed=t)))).status_code == 200
    rows = await gateway.read("nvlink_domains")
    assert [(r["uuid"], r["members"]) for r in rows] == [("default/fabric/c/rack/clique-0", 12)]


async def test_a_host_cannot_join_another_hosts_or_clusters_domain(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """A reported fabric clique is named within the reporter's cluster: a host of cluster `dj`
    reporting an HGX board's own domain (`h100-a/nvlink/0`) got a 16-GPU "full mesh" across the
    two boards and clusters (a probe's case); a tray of another cluster naming a rack's clique
    no longer joins it either."""
    assert (await put_host(client, as_json(h100("h100-a")))).status_code == 200
    intruder = as_json(h100("intruder", seed=5, cluster="dj"))
    for g in intruder["gpus"]:
        g["nvlink_domain"] = "h100-a/nvlink/0"
    assert (await put_host(client, intruder)).status_code == 200
    for t in range(2):
        trays = as_json(tray(f"tray-{t}", "c/rack/clique-0", seed=10 + t))
        trays["cluster"] = "default" if t == 0 else "other"
        assert (await put_host(client, trays)).status_code == 200
    rows = await gateway.read("nvlink_domains")
    assert [(r["uuid"], r["members"]) for r in rows] == [
        ("dj/fabric/h100-a/nvlink/0", 8),
        ("h100-a/nvlink/0", 8),
        ("default/fabric/c/rack/clique-0", 4),
        ("other/fabric/c/rack/clique-0", 4),
    ]
    result = await PlacementEngine(gateway).place(parse_request("16xH100 nvlink=full-mesh").validated())
    assert not result.candidates


async def test_domain_pruned_when_host_loses_nvlink(client: httpx.AsyncClient, gateway: Gateway) -> None:
    data = as_json(a100())
    await put_host(client, data)
    assert len(await gateway.read("nvlink_domains")) == 4
    for g in data["gpus"]:
        g["nvlinks"] = []
    data["collected_at"] = soon(100)
    await put_host(client, data)
    assert await gateway.read("nvlink_domains") == []


async def test_one_statement_per_document_even_when_a_tray_leaves_its_domain(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """#15: a host document is one write (facts and every counter it moves, the domains it
    leaves included): nothing to repair if the service dies between statements."""
    for t in range(3):
        assert (await put_host(client, as_json(tray(f"tray-{t}", "c/rack/clique-0", seed=t)))).status_code == 200
    moved = as_json(tray("tray-2", "c/rack/clique-1", seed=2))
    moved["collected_at"] = soon(100)
    gateway.stats.clear()
    assert (await put_host(client, moved)).status_code == 200
    assert {name: s.calls for name, s in gateway.stats.items()} == {"ingest_host": 1}
    rows = await gateway.read("nvlink_domains")
    assert [(r["uuid"], r["members"]) for r in rows] == [
        ("default/fabric/c/rack/clique-0", 8),
        ("default/fabric/c/rack/clique-1", 4),
    ]
    sizes = sorted((r["size"], r["domains"], int(r["free_gpus"])) for r in await gateway.read("domain_summary"))
    assert sizes == [(4, 1, 4), (8, 1, 8)]  # the domain left behind was recounted (size and free)
    assert await gateway.read("counter_drift") == []
    # The last tray of a domain leaving it removes the domain, in the same statement.
    back = as_json(tray("tray-2", "c/rack/clique-0", seed=2))
    back["collected_at"] = soon(200)
    gateway.stats.clear()
    assert (await put_host(client, back)).status_code == 200
    assert {name: s.calls for name, s in gateway.stats.items()} == {"ingest_host": 1}
    assert [(r["uuid"], r["members"]) for r in await gateway.read("nvlink_domains")] == [
        ("default/fabric/c/rack/clique-0", 12)
    ]
    assert await gateway.read("counter_drift") == []


async def test_fabric_ingest_and_replace(client: httpx.AsyncClient, gateway: Gateway) -> None:
    cluster = build("a100-pcie:hosts=3")
    for h in cluster.hosts:
        await put_host(client, as_json(h))
    fabric = json.loads(cluster.fabric().model_dump_json())
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 200, resp.text
    host = (await client.get("/v1/hosts/a100-pcie-001")).json()
    assert {n["leaf"] for n in host["nics"]} == {"a100-pcie-leaf0"}
    # same fabric again: same graph
    before = await snapshot(gateway)
    assert (await client.put("/v1/fabric", json=fabric)).status_code == 200
    assert await snapshot(gateway) == before
    # a fabric naming a NIC the graph does not have is refused whole
    fabric["nic_uplinks"].append({"host": "ghost", "nic": "mlx5_0", "switch": "a100-pcie-leaf0", "bandwidth_gbps": 25})
    fabric["switches"].append({"name": "extra-leaf", "tier": "leaf"})
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 422
    assert resp.json()["detail"] == ["ghost/nic/mlx5_0"]
    assert await snapshot(gateway) == before
    # More than 20 missing: the first 20 by key, the same on both stores (collect keeps no order).
    ghosts = [f"ghost-{n:02d}" for n in range(24, -1, -1)]
    fabric["nic_uplinks"] += [
        {"host": g, "nic": "mlx5_0", "switch": "a100-pcie-leaf0", "bandwidth_gbps": 25} for g in ghosts
    ]
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 422 and "26 cabled NIC(s)" in resp.text
    assert resp.json()["detail"] == sorted([f"{g}/nic/mlx5_0" for g in ghosts] + ["ghost/nic/mlx5_0"])[:20]
    assert await snapshot(gateway) == before


async def test_a_fabric_import_replaces_what_it_says_of_a_switch(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """A re-import without a leaf's rail, scalable unit or model removes them: `SET +=` kept what
    the new import left out, and the explorer drew the leaf on its old rail (a probe's case)."""
    cluster = build("a100-pcie:hosts=2")
    for h in cluster.hosts:
        await put_host(client, as_json(h))
    fabric = json.loads(cluster.fabric().model_dump_json())
    leaf = fabric["switches"][0]
    leaf.update({"rail": 5, "scalable_unit": "su-x", "model": "QM9700"})
    assert (await client.put("/v1/fabric", json=fabric)).status_code == 200
    query = adhoc("switch_props", "MATCH (s:Switch {name: $v}) RETURN properties(s) AS p")
    props = (await gateway.backend.run(query, {"v": leaf["name"]}, write=False, timeout_s=30))[0]["p"]
    assert (props["rail"], props["scalable_unit"], props["model"]) == (5, "su-x", "QM9700")
    for key in ("rail", "scalable_unit", "model"):
        del leaf[key]
    assert (await client.put("/v1/fabric", json=fabric)).status_code == 200
    props = (await gateway.backend.run(query, {"v": leaf["name"]}, write=False, timeout_s=30))[0]["p"]
    assert not {"rail", "scalable_unit", "model"} & set(props), props


async def test_a_fabric_naming_another_clusters_switch_is_a_conflict(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """A switch is in one cluster's fabric. Another cluster's import that names it would take it
    over with the first cluster's cables still on it (its leaf counter then counting both
    clusters' hosts), and the first cluster's next import would take it back: refused whole."""
    first, second = build("a100-pcie:hosts=2", cluster="east"), build("l40s:hosts=2", cluster="west")
    assert first.name != second.name
    for h in (*first.hosts, *second.hosts):
        await put_host(client, as_json(h))
    assert (await client.put("/v1/fabric", json=json.loads(first.fabric().model_dump_json()))).status_code == 200
    before = await snapshot(gateway)
    fabric = json.loads(second.fabric().model_dump_json())
    taken = "a100-pcie-leaf0"
    fabric["switches"].append({"name": taken, "tier": "leaf"})
    fabric["nic_uplinks"][0]["switch"] = taken
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 409, resp.text
    assert resp.json()["detail"] == [{"switch": taken, "cluster": first.name}]
    assert await snapshot(gateway) == before
    # Its own fabric again, and the second cluster's without the first's switch, go through.
    assert (await client.put("/v1/fabric", json=json.loads(first.fabric().model_dump_json()))).status_code == 200
    assert (await client.put("/v1/fabric", json=json.loads(second.fabric().model_dump_json()))).status_code == 200
    # The way to move a switch, as the answer says: the first cluster's fabric without it, then.
    assert (await client.put("/v1/fabric", json={"cluster": first.name})).status_code == 200
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 200, resp.text
    assert (await client.get("/v1/hosts/l40s-001")).json()["nics"][0]["leaf"] == taken


async def test_a_fabric_cabling_another_clusters_nic_is_a_conflict(client: httpx.AsyncClient, gateway: Gateway) -> None:
    """A NIC has one cable, in one cluster's fabric. One cluster's import that cabled a NIC another
    cluster's fabric holds gave it a second cable: two leaves, its host one hop from both clusters'
    hosts, and placement offered sets across both (a probe's case): refused whole."""
    first, second = build("a100-pcie:hosts=2", cluster="east"), build("l40s:hosts=2", cluster="west")
    for h in (*first.hosts, *second.hosts):
        await put_host(client, as_json(h))
    for c in (first, second):
        assert (await client.put("/v1/fabric", json=json.loads(c.fabric().model_dump_json()))).status_code == 200
    before = await snapshot(gateway)
    fabric = json.loads(second.fabric().model_dump_json())
    theirs = json.loads(first.fabric().model_dump_json())["nic_uplinks"][0]
    fabric["nic_uplinks"].append({**theirs, "switch": fabric["switches"][0]["name"]})
    resp = await client.put("/v1/fabric", json=fabric)
    assert resp.status_code == 409, resp.text
    nic = f"{theirs['host']}/nic/{theirs['nic']}"
    assert resp.json()["detail"] == [{"nic": nic, "switch": theirs["switch"], "cluster": first.name}]
    assert await snapshot(gateway) == before
    # The way to move a cable, as the answer says: the first cluster's fabric without it, then.
    left = json.loads(first.fabric().model_dump_json())
    left["nic_uplinks"] = left["nic_uplinks"][1:]
    assert (await client.put("/v1/fabric", json=left)).status_code == 200
    assert (await client.put("/v1/fabric", json=fabric)).status_code == 200, resp.text


async def test_healthz_counts(client: httpx.AsyncClient, store: str) -> None:
    for facts in (h100(), a100(), l40()):
        await put_host(client, as_json(facts))
    body = (await client.get("/healthz")).json()
    assert body["store"] == {"falkordb": "embedded", "neo4j": "neo4j"}[store]
    assert body["graph_version"] == GRAPH_VERSION
    assert (body["hosts"], body["gpus"]) == (3, 20)
    assert body["gpus_by_model"] == {"NVIDIA H100 80GB HBM3": 8, "NVIDIA A100 80GB PCIe": 8, "NVIDIA L40S": 4}


async def test_metrics_update_only_what_changes_fast(client: httpx.AsyncClient) -> None:
    data = as_json(h100())
    data["collected_at"] = soon(100)
    await put_host(client, data)
    metrics = {
        "hostname": "node-a",
        "collected_at": soon(110),
        "gpus": [{"uuid": data["gpus"][0]["uuid"], "temperature_c": 91.5, "health": "degraded"}],
    }
    resp = await client.put("/v1/hosts/node-a/metrics", json=metrics)
    assert resp.status_code == 200
    assert (resp.json()["applied"], resp.json()["gpus"]) == (True, 1)
    gpu = (await client.get("/v1/hosts/node-a")).json()["gpus"][0]
    assert (gpu["temperature_c"], gpu["health"]) == (91.5, "degraded")
    assert gpu["memory_mib"] == data["gpus"][0]["memory_mib"]
    # older metrics are ignored, unknown hosts are a 404
    metrics["collected_at"] = soon(50)
    assert (await client.put("/v1/hosts/node-a/metrics", json=metrics)).json()["applied"] is False
    metrics["hostname"] = "nobody"
    assert (await client.put("/v1/hosts/nobody/metrics", json=metrics)).status_code == 404


def calls(gw: Gateway) -> dict[str, int]:
    return {name: s.calls for name, s in gw.stats.items() if s.calls}


async def test_a_document_with_an_unchanged_topology_is_one_small_write(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """#15: collectors resend the same topology every interval; the service applies it as the
    host's timestamps and the GPUs' health and load (`ingest_host_unchanged`), losing nothing,
    and moves the counters when a GPU fails."""
    first = as_json(h100())
    assert (await put_host(client, first)).json()["applied"]
    full = await snapshot(gateway)
    again = as_json(h100())
    again["collected_at"] = soon(100)
    again["gpus"][0]["temperature_c"] = 77.0
    again["gpus"][1]["health"] = "failed"
    again["gpus"][1]["xid_errors"] = [79]
    gateway.stats.clear()
    resp = await put_host(client, again)
    assert resp.status_code == 200 and resp.json()["applied"] is True
    assert calls(gateway) == {"ingest_host_unchanged": 1}
    host = (await client.get("/v1/hosts/node-a")).json()
    assert host["gpus"][0]["temperature_c"] == 77.0 and host["gpus"][1]["health"] == "failed"
    [row] = await gateway.read("host_freshness", {"host": "node-a"})
    assert row["collected_at"] == pytest.approx(datetime.fromisoformat(again["collected_at"]).timestamp(), abs=1e-3)
    [counts] = await gateway.read("reservations/free_counts", {"hosts": ["node-a"]})
    assert counts["host_free"] == 7 and await gateway.read("counter_drift") == []
    # The same document through the full statement writes the same graph.
    await with_test_queries(gateway).write("reset_graph")
    direct = HostFacts.model_validate(again)
    assert (await ingest_host(gateway, direct)).applied
    assert await snapshot(gateway) != full  # (the document did change something)
    whole = await snapshot(gateway)
    await with_test_queries(gateway).write("reset_graph")
    assert (await put_host(client, first)).json()["applied"]
    gateway.stats.clear()
    assert (await put_host(client, again)).json()["applied"]
    assert calls(gateway) == {"ingest_host_unchanged": 1}
    assert await snapshot(gateway) == whole


async def test_a_changed_topology_or_another_writer_goes_through_the_full_statement(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    data = as_json(h100())
    await put_host(client, data)
    fewer = as_json(h100())
    fewer["collected_at"] = soon(100)
    fewer["nics"] = fewer["nics"][:-1]
    fewer["gpu_nic_affinity"] = [a for a in fewer["gpu_nic_affinity"] if a["nic"] != data["nics"][-1]["name"]]
    gateway.stats.clear()
    assert (await put_host(client, fewer)).json()["applied"]
    assert calls(gateway) == {"ingest_host": 1}  # the fingerprint differs: no small statement tried
    # Another replica (no shared cache) writes the first topology back...
    data["collected_at"] = soon(200)
    assert (await ingest_host(gateway, HostFacts.model_validate(data))).applied
    # ... so this process's hint is stale: the small statement writes nothing, the full one decides.
    fewer["collected_at"] = soon(300)
    gateway.stats.clear()
    assert (await put_host(client, fewer)).json()["applied"]
    assert calls(gateway) == {"ingest_hosts_unchanged": 1, "ingest_host": 1}
    host = (await client.get("/v1/hosts/node-a")).json()
    assert len(host["nics"]) == len(fewer["nics"])
    # An older document with the same topology is refused as before (nothing lost, nothing older applied).
    fewer["collected_at"] = soon(250)
    resp = await put_host(client, fewer)
    assert resp.status_code == 200 and resp.json()["applied"] is False


async def test_unchanged_documents_arriving_together_share_one_statement(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    """#15: the steady state (every collector resends its topology) is group-committed: documents
    arriving while a statement is in flight go together in the next, each with its own answer."""
    hosts = build("l40s:hosts=16").hosts
    for h in hosts:
        assert (await put_host(client, as_json(h))).json()["applied"]
    resent = []
    for i, h in enumerate(hosts):
        data = as_json(h)
        data["collected_at"] = soon(100)
        data["gpus"][0]["temperature_c"] = 40.0 + i
        resent.append(data)
    gateway.stats.clear()
    answers = await asyncio.gather(*(put_host(client, d) for d in resent))
    assert all(a.status_code == 200 and a.json()["applied"] for a in answers)
    used = calls(gateway)
    assert set(used) == {"ingest_hosts_unchanged"} and used["ingest_hosts_unchanged"] < len(hosts)
    temps = {}
    for h in hosts:
        temps[h.hostname] = (await client.get(f"/v1/hosts/{h.hostname}")).json()["gpus"][0]["temperature_c"]
    assert temps == {h.hostname: 40.0 + i for i, h in enumerate(hosts)}
    assert await gateway.read("counter_drift") == []


async def test_a_host_that_drops_its_cabled_nic_leaves_that_leaf_in_the_same_write(gateway: Gateway) -> None:
    """A NIC the facts no longer list takes its cable with it. Its leaf was recounted only if the
    host still reached it, so a leaf the host left kept counting the host's GPUs (placement saw
    free GPUs under it that no cable reached) until the startup drift repair; and the host's
    `leaves` still named it."""
    c = build("superpod-h100:sus=1")
    await load(gateway, c)
    host = c.hosts[0]
    gone = host.nics[0].name
    [leaf] = {u.switch for u in c.nic_uplinks if u.host == host.hostname and u.nic == gone}
    kept = sorted({u.switch for u in c.nic_uplinks if u.host == host.hostname and u.nic != gone})
    assert leaf not in kept and kept
    before = {r["name"]: r["free_gpus"] for r in await gateway.read("fabric_switches", SWITCHES)}
    later = host.model_copy(
        update={
            "collected_at": host.collected_at + timedelta(seconds=10),
            "nics": host.nics[1:],
            "gpu_nic_affinity": [a for a in host.gpu_nic_affinity if a.nic != gone],
        }
    )
    assert (await ingest_host(gateway, later)).applied
    assert await gateway.read("counter_drift") == []
    after = {r["name"]: r["free_gpus"] for r in await gateway.read("fabric_switches", SWITCHES)}
    assert after[leaf] == before[leaf] - len(host.gpus) and {k: after[k] for k in kept} == {k: before[k] for k in kept}
    [placed] = await gateway.read("placement_host_topology", {"hosts": [host.hostname]})
    assert placed["hosts"][0]["leaves"] == kept


SWITCHES = {"cluster": "default", "tier": "leaf", "after": "", "first": 500}


async def props_of(gw: Gateway, label: str, key: str, value: str) -> dict[str, Any]:
    query = adhoc(f"props_{label}", f"MATCH (n:{label} {{{key}: $v}}) RETURN properties(n) AS p")
    [row] = await gw.backend.run(query, {"v": value}, write=False, timeout_s=30)
    props: dict[str, Any] = row["p"]
    return props


async def test_a_gpu_whose_mig_mode_becomes_unknown_is_whole_again(gateway: Gateway) -> None:
    """Unknown MIG mode means off to every reader; it was dropped from the GPU's properties, so a
    GPU whose mode went from on to unknown kept `mig_mode: true` and stayed out of placement for
    good. (Other facts that become unknown keep their last value: docs/store.md says why.)"""
    base = build("a100-pcie:hosts=1").hosts[0]
    mig = [g.model_copy(update={"mig_mode": True}) if g.index == 0 else g for g in base.gpus]
    assert (await ingest_host(gateway, base.model_copy(update={"gpus": mig}))).applied
    whole = [g.model_copy(update={"mig_mode": None}) if g.index == 0 else g for g in base.gpus]
    later = base.model_copy(update={"gpus": whole, "collected_at": base.collected_at + timedelta(seconds=10)})
    assert (await ingest_host(gateway, later)).applied
    assert (await props_of(gateway, "GPU", "uuid", base.gpus[0].uuid))["mig_mode"] is False
    placed = await PlacementEngine(gateway).place(parse_request(f"{len(base.gpus)}"))
    assert placed.candidates  # every GPU of the host, the one that was MIG-enabled included
    assert await gateway.read("counter_drift") == []


async def test_a_facts_document_older_than_the_metrics_keeps_their_health_and_load(gateway: Gateway) -> None:
    """Metrics (health and load, often) and facts (everything, each interval) arrive separately.
    Facts collected before the stored metrics wrote their GPUs' health and load over the newer
    ones: a GPU the metrics had failed was counted free again. They now give the topology only,
    through the full statement (the unchanged-topology statements leave such a document to it)."""
    host = build("a100-pcie:hosts=1").hosts[0]
    gpu = host.gpus[0].uuid
    assert (await ingest_host(gateway, host)).applied
    failed = HostMetrics.model_validate(
        {"hostname": host.hostname, "collected_at": host.collected_at + timedelta(seconds=100),
         "gpus": [{"uuid": gpu, "health": "failed"}]}
    )  # fmt: skip
    assert (await ingest_metrics(gateway, failed)).applied
    for seconds, health, free in ((50, "failed", len(host.gpus) - 1), (150, "ok", len(host.gpus))):
        later = host.model_copy(update={"collected_at": host.collected_at + timedelta(seconds=seconds)})
        assert (await ingest_host(gateway, later)).applied
        assert (await props_of(gateway, "GPU", "uuid", gpu))["health"] == health, seconds
        assert (await props_of(gateway, "Host", "name", host.hostname))["free_gpus"] == free, seconds
        assert await gateway.read("counter_drift") == []
