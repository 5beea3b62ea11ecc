"""Placement's store round trips: single-host and single-domain requests cost one statement,
multi-host requests under one leaf one more at most, once the candidate hosts' topology is kept
(graphsvc.placement.topology_cache: a host not yet kept costs one placement_host_topology read,
shared by every such host of the statement).

Counted with the gateway's per-query statistics (as test_host_name_costs_one_query does), on
both stores, through GraphQL, and the statement `explain` shows runs as shown: its text with
its parameters, and its parameters as the Cypher literals of the Neo4j Browser paste.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from graphsvc.placement import engine as engine_module
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import Candidate
from graphsvc.placement.request import parse_request
from graphsvc.placement.statement import cypher_literal
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import SCAN_SUFFIX, NamedQuery
from graphsvc.synthetic.clusters import build
from tests.cluster_helpers import load, occupy
from tests.placement_oracle import check_candidate, snapshot
from tests.stores import adhoc

QUERY = """query($t: String!) { placementText(text: $t) {
  candidates { gpus { uuid host { name } } }
  explain { cypher { name statement parameters browser } } } }"""


# The graph's GPU models and its host count: read together once a minute per engine (graph_facts), not per request.
CACHED = {"placement_gpu_models", "reservations/host_count"}
TOPOLOGY = "placement_host_topology"  # read once per host and topology key, then kept


def fit(statement: str) -> str:
    """The form of a candidate statement the engine runs here: these clusters have fewer hosts
    than SCAN_BLOCKS_UP_TO, so its `_scan` form (test_free_blocks_hint: both answer alike)."""
    return f"{statement}{SCAN_SUFFIX}"


# A multi-host request under one leaf: the leaf statement, and the cluster's free blocks read
# beside it (placement_cluster_blocks, sent at the same time on another connection).
LEAVES_AND_BLOCKS = {fit("placement_leaves_fit"): 1, fit("placement_cluster_blocks"): 1}


def calls(gw: Gateway, *, topology: bool = True) -> dict[str, int]:
    skip = CACHED if topology else {*CACHED, TOPOLOGY}
    return {name: stat.calls for name, stat in gw.stats.items() if stat.calls and name not in skip}


async def ask(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    body = (await client.post("/graphql", json={"query": QUERY, "variables": {"t": text}})).json()
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["placementText"]
    assert answer["candidates"], text
    return answer


@pytest.fixture
async def cluster(gateway: Gateway) -> None:
    c = await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    # Some occupancy, so best fit has something to choose between.
    await occupy(gateway, [h.gpus[i].uuid for h in c.hosts[::3] for i in range(min(3, len(h.gpus)))])


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("4xH100", fit("placement_hosts_fit")),  # one host, no NVLink asked
        ("1xH100", fit("placement_hosts_fit")),
        ("8xH100 per-host=8 nvlink=full-mesh", fit("placement_hosts_fit")),
        ("8xH100 nvlink=full-mesh", fit("placement_domains_fit")),  # one HGX board
        ("16xGB200 nvlink=full-mesh", fit("placement_domains_fit")),  # one NVL72 clique, across trays
        ("2xA100 nvlink=any", fit("placement_domains_fit")),  # a bridged pair
    ],
)
async def test_single_host_and_single_domain_cost_one_statement(
    gateway: Gateway, client: httpx.AsyncClient, cluster: None, text: str, statement: str
) -> None:
    gateway.stats.clear()
    cold = await ask(client, text)  # the candidate hosts' topology is read once and kept
    assert calls(gateway) in ({statement: 1}, {statement: 1, TOPOLOGY: 1})
    assert [s["name"] for s in cold["explain"]["cypher"]] == [
        statement,
        *([TOPOLOGY] if TOPOLOGY in calls(gateway) else []),
    ]
    gateway.stats.clear()
    answer = await ask(client, text)
    assert calls(gateway) == {statement: 1}
    assert [s["name"] for s in answer["explain"]["cypher"]] == [statement]
    snap = await snapshot(gateway)
    req = parse_request(text)
    for c in answer["candidates"]:
        assert check_candidate(snap, req, [g["uuid"] for g in c["gpus"]]) == [], text


@pytest.mark.parametrize(
    ("text", "statements"),
    [
        # No host holds 16, and the engine has seen that (the fullest host in every statement's
        # free blocks): the leaf statement alone, with the cluster's free blocks read beside it
        # (sent at the same time), the one-host statement skipped.
        ("16xH100 ib-hops<=1", LEAVES_AND_BLOCKS),
        ("16xH100 per-host=4 ib-hops<=1", LEAVES_AND_BLOCKS),
        ("8xH100 per-host=2 ib-hops<=1 rail-aligned", LEAVES_AND_BLOCKS),
    ],
)
async def test_multi_host_under_one_leaf(
    gateway: Gateway, client: httpx.AsyncClient, cluster: None, text: str, statements: dict[str, int]
) -> None:
    await ask(client, text)  # the candidate hosts' topology is read once and kept
    gateway.stats.clear()
    answer = await ask(client, text)
    assert calls(gateway) == statements
    assert [s["name"] for s in answer["explain"]["cypher"]] == list(statements)
    snap = await snapshot(gateway)
    req = parse_request(text)
    for c in answer["candidates"]:
        assert check_candidate(snap, req, [g["uuid"] for g in c["gpus"]]) == [], text


@pytest.mark.parametrize("text", ["4", "1 limit=5", "2 nvlink=full-mesh"])
async def test_a_request_naming_no_model_reads_its_ranking_blocks_with_its_first_statement(
    gateway: Gateway, cluster: None, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request naming no model on a cluster of four models: a search for all models and one for
    each (search_each_model); the largest free blocks ranking needs come with the first statement,
    so no largest_free_* read follows, and the answer is the one those reads gave."""
    engine = PlacementEngine(gateway)
    req = parse_request(text)
    models = await engine.models()
    assert len(models) == 4
    await engine.place(req)  # the hosts' topology kept
    gateway.stats.clear()
    result = await engine.place(req)
    # A search for all models, then every model's first page in one statement (a model no host
    # holds 4 of: leaves too).
    statement = "placement_domains_fit" if "nvlink" in text else "placement_hosts_fit"
    assert calls(gateway)[fit(statement)] == 1
    assert calls(gateway)[f"{statement}_each_model"] == 1
    assert not {"largest_free_hosts", "largest_free_domains"} & set(calls(gateway))
    monkeypatch.setattr(engine_module, "EACH_MODEL_BLOCKS", 0)  # as before: the blocks read after
    gateway.stats.clear()
    before = await engine.place(req)
    assert {"largest_free_hosts", "largest_free_domains"} <= set(calls(gateway))
    assert [_ranked(c) for c in result.candidates] == [_ranked(c) for c in before.candidates]


@pytest.fixture
async def mixed_cluster(gateway: Gateway) -> None:
    """The four-model cluster, partly taken, with one H100 host holding two L40S GPUs too (its
    `gpu_model` says H100: a host of several models, its NVLink domain too), and one A100 host
    of another A100 model (two models of one family, whose searches page the same hosts)."""
    c = build("demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    h100 = next(i for i, h in enumerate(c.hosts) if "H100" in h.gpus[0].model)
    host = c.hosts[h100]
    l40s = next(g.model for h in c.hosts for g in h.gpus if "L40S" in g.model)
    gpus = [g.model_copy(update={"model": l40s}) if g.index in (6, 7) else g for g in host.gpus]
    c.hosts[h100] = host.model_copy(update={"gpus": gpus})
    a100 = next(i for i, h in enumerate(c.hosts) if "A100" in h.gpus[0].model)
    sxm = [g.model_copy(update={"model": "NVIDIA A100-SXM4-80GB"}) for g in c.hosts[a100].gpus]
    c.hosts[a100] = c.hosts[a100].model_copy(update={"gpus": sxm})
    await load(gateway, c)
    await occupy(gateway, [h.gpus[i].uuid for h in c.hosts[1::3] for i in range(min(3, len(h.gpus)))])


EACH_MODEL = {"placement_hosts_fit_each_model", "placement_domains_fit_each_model"}


@pytest.mark.parametrize(
    "text",
    [
        *["1", "2", "4", "8", "3 packing=spread", "2 limit=6", "6 exclusive", "5 temp<=60", "1 exclude=h100-su1-n01"],
        *["2 nvlink=full-mesh", "4 nvlink=any", "8 nvlink=full-mesh", "16 nvlink=full-mesh limit=4"],
        *["3 nvlink=any packing=spread", "2 nvlink=full-mesh exclude=h100-su1-n02"],
    ],
)
async def test_every_models_first_page_read_in_one_statement_gives_the_same_answer(
    gateway: Gateway, mixed_cluster: None, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request naming no model reads every model's first page of hosts, or of NVLink domains,
    in one statement (placement_hosts_fit_each_model, placement_domains_fit_each_model), not one
    statement a model: the candidates and their ranking are those the statement a model gave, on
    a host (and an NVLink domain) of two models too."""
    engine = PlacementEngine(gateway)
    assert sum("A100" in m for m in await engine.models()) == 2
    req = parse_request(text)
    await engine.place(req)  # the hosts' topology kept
    gateway.stats.clear()
    together = await engine.place(req)
    (used,) = EACH_MODEL & set(calls(gateway))
    assert calls(gateway)[used] == 1
    assert used in [s.name for s in together.statements]

    async def one_statement_a_model(_self: object, _subs: object, _models: object) -> None:
        return None

    monkeypatch.setattr(engine_module._Search, "read_first_pages", one_statement_a_model)
    gateway.stats.clear()
    apart = await engine.place(req)
    assert not EACH_MODEL & set(calls(gateway))
    assert [_ranked(c) for c in together.candidates] == [_ranked(c) for c in apart.candidates]
    assert together.searched_units == apart.searched_units


def _ranked(c: Candidate) -> tuple[object, ...]:
    """What ranking decided (the reason's text also says how old the facts are)."""
    return [g.uuid for g in c.gpus], c.score, c.largest_free_block_before, c.largest_free_block_after


async def test_explained_statement_runs_as_shown(gateway: Gateway, cluster: None) -> None:
    """The statement text with its parameters gives the candidates' hosts again, and every
    parameter's Browser literal is the same value to the store."""
    engine = PlacementEngine(gateway)
    await engine.place(parse_request("8xH100 nvlink=full-mesh"))  # the hosts' topology kept
    result = await engine.place(parse_request("8xH100 nvlink=full-mesh"))
    (shown,) = result.statements
    again = await gateway.backend.run(
        NamedQuery(shown.name, shown.text, Path("explain")), shown.params, write=False, timeout_s=30
    )
    found = {u["unit"] for u in again[0]["found"]}
    assert {g.nvlink_domain for c in result.candidates for g in c.gpus} <= found
    assert shown.browser.startswith(":params {")
    literals = ", ".join(f"{cypher_literal(v)} AS {k}" for k, v in shown.params.items())
    echo = NamedQuery("echo", f"RETURN {literals}", Path("echo"))
    (row,) = await gateway.backend.run(echo, {}, write=False, timeout_s=30)
    assert _close(row, shown.params)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return bool(a == b)


@pytest.mark.parametrize(
    ("text", "statements"),
    [
        ("4xH100 limit=20", {fit("placement_hosts_fit"): 1}),
        ("2xA100 nvlink=any limit=20", {fit("placement_domains_fit"): 1}),
        ("16xH100 per-host=4 ib-hops<=1 limit=20", LEAVES_AND_BLOCKS),
    ],
)
async def test_failed_gpu_is_never_a_candidate_of_the_one_statement_paths(
    gateway: Gateway, client: httpx.AsyncClient, cluster: None, text: str, statements: dict[str, int]
) -> None:
    """#15: the one-statement searches apply the health rule (a failed GPU is never a candidate)."""
    fail = "MATCH (:Host)-[:HAS_GPU]->(g:GPU) WHERE g.index = 0 SET g.health = 'failed' RETURN g.uuid AS u"
    rows = await gateway.backend.run(adhoc("fail_index_0", fail), {}, write=True, timeout_s=60)
    failed = {r["u"] for r in rows}
    assert failed
    gateway.stats.clear()
    answer = await ask(client, text)
    assert calls(gateway, topology=False) == statements
    assert not {g["uuid"] for c in answer["candidates"] for g in c["gpus"]} & failed


async def test_a_host_fuller_than_any_seen_before_is_still_offered(gateway: Gateway) -> None:
    """The one-host statement is skipped for a request larger than any free host the engine has
    seen only when the leaf statement's free blocks confirm no host holds it now; when one does,
    the search runs in the usual order, so leaves that alone give enough candidates (three
    scalable units, `limit=1`: three wanted) do not hide the host."""
    c = await load(gateway, "superpod-h100:sus=3")
    await occupy(gateway, [g.uuid for h in c.hosts for g in h.gpus[:4]])  # every host 4 free
    engine = PlacementEngine(gateway)
    engine.scan_blocks_up_to = -1  # the seek forms, whose free blocks start from the engine's hint
    assert (await engine.place(parse_request("4xH100"))).candidates
    assert engine.block_tops.host == 4
    gateway.stats.clear()
    two_hosts = await engine.place(parse_request("8xH100 ib-hops<=1 limit=1"))
    assert two_hosts.candidates and all(len({g.host for g in x.gpus}) == 2 for x in two_hosts.candidates)
    assert calls(gateway, topology=False) == {"placement_leaves_fit": 1, "placement_cluster_blocks": 1}
    whole = c.hosts[5]
    await occupy(gateway, [g.uuid for g in whole.gpus[:4]], state="free")
    gateway.stats.clear()
    result = await engine.place(parse_request("8xH100 ib-hops<=1 limit=1"))
    # The leaf statement that showed the host (the free blocks beside it), then the usual order:
    # the host's, the leaf's again (the free blocks kept from the first).
    assert calls(gateway, topology=False) == {
        "placement_leaves_fit": 2,
        "placement_cluster_blocks": 1,
        "placement_hosts_fit": 1,
    }
    assert [{g.host for g in x.gpus} for x in result.candidates] == [{whole.hostname}]
