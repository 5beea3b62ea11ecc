"""The free-blocks fragment's probe start is a hint: any hint gives the same blocks.

`placement_free_blocks` probes free counts down from `$host_top` / `$domain_top`, which the
engine sets to the largest counts it has seen (`BlockTops`). A unit that has since grown past
the hint must still be found, so every hint, too low, exact or too high, must answer the
largest free hosts and NVLink domains exactly as the plain ordered queries do.

Each candidate statement also has a `_scan` form, derived by the registry (the free blocks by
`placement_free_blocks_scan`; the leaf statement's page of leaves by `placement_leaf_page_scan`,
the domain statement's page of NVLink domains by `placement_domain_page_scan`),
which the engine runs on clusters of at most `SCAN_BLOCKS_UP_TO` hosts: it must give the same row
as the seek form, and the engine the same answers whichever form it runs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from graphsvc.placement.engine import BlockTops, PlacementEngine
from graphsvc.placement.model import PlacementResult
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from graphsvc.store.queries import SCAN_FORMS, default_registry
from graphsvc.store.schema import TIE_BUCKETS
from tests.cluster_helpers import load, occupy
from tests.helpers import DEFAULT_GPU_FILTERS
from tests.queries import with_test_queries


def fit_params(host_top: int, domain_top: int, blocks: int) -> dict[str, Any]:
    return {
        "exclude": [],
        "filters": DEFAULT_GPU_FILTERS,
        "now": 1.0,
        "stale_before": 0.0,
        "virtual_free": [],
        "blocks": blocks,
        "host_top": host_top,
        "domain_top": domain_top,
        "first_size": 1,
        "last_size": 128,
        "step": 1,
        "mode": "none",
        "model": "",
        "prefilter_models": [],
        "known": [""],
        "n": 1,
        "skip": 0,
        "limit": 3,
        "probe": 3,
        "tie_buckets": TIE_BUCKETS,
    }


def taken_by(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Those of `params` that the named statement takes."""
    taken = default_registry()[name].parameters
    return {k: v for k, v in params.items() if k in taken}


def blocks_params(host_top: int, domain_top: int, blocks: int) -> dict[str, Any]:
    """placement_cluster_blocks' parameters: the free blocks' own, as the engine sends them beside
    the leaf statement."""
    return taken_by("placement_cluster_blocks", fit_params(host_top, domain_top, blocks))


async def test_every_hint_gives_the_largest_free_blocks(gateway: Gateway) -> None:
    await load(gateway, "nvl72")  # one 72-GPU NVLink domain over 18 trays of 4
    cluster = await load(gateway, "superpod-h100:sus=1")  # 31 hosts, a domain of 8 each
    rng = random.Random(5)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.6])
    for blocks in (1, 4, 9):
        hosts = [
            {"unit": r["unit"], "free": r["free"]}
            for r in await gateway.read("largest_free_hosts", {"top": 128, "limit": blocks})
        ]
        domains = [
            {"unit": r["unit"], "free": r["free"]}
            for r in await gateway.read("largest_free_domains", {"top": 576, "limit": blocks})
        ]
        largest = domains[0]["free"]
        assert hosts and largest > 8  # the NVL72 domain, most of it free
        for host_top, domain_top in ((0, 0), (1, 1), (3, 5), (8, 8), (8, largest - 1), (8, largest), (128, 576)):
            rows = await gateway.read("placement_hosts_fit", fit_params(host_top, domain_top, blocks))
            assert [b for b in rows[0]["host_blocks"] if b] == hosts, (blocks, host_top)
            assert [b for b in rows[0]["domain_blocks"] if b] == domains, (blocks, domain_top)


FIT_STATEMENTS = ("placement_hosts_fit", "placement_domains_fit", "placement_leaves_fit")
# The statements that read the cluster's free blocks: the one-host and one-domain statements, and
# the blocks alone, which the engine sends beside the leaf statement (it has none of its own).
BLOCKS_STATEMENTS = ("placement_hosts_fit", "placement_domains_fit", "placement_cluster_blocks")


def test_each_candidate_statement_has_a_scan_form_without_the_seek_hints() -> None:
    registry = default_registry()
    for name in BLOCKS_STATEMENTS:
        seek, scan = registry[name], registry[f"{name}_scan"]
        paged_by_size = {"probe"} if name == "placement_domains_fit" else set()  # the lazy seek's page bound
        assert seek.parameters - scan.parameters == {"host_top", "domain_top", *paged_by_size}
        assert scan.signature is not None and set(scan.signature.params) == scan.parameters
        assert scan.signature.row == (seek.signature.row if seek.signature else None)
        # The same statement but for the fragment: the seek form's own text, the scan fragment in it.
        assert scan.text.count("block_host:Host") == 1 and seek.text.count("block_host:Host") == 4
        assert "@param host_top" in seek.text and "@param host_top" not in scan.text  # its header too
    # placement_leaf_total counts a leaf page's leaves (a probe's order, PlacementEngine.fits) by
    # the page's own fragment, so it has the page's two forms too.
    assert {n for n in registry.names() if n.endswith("_scan") and n.startswith("placement_")} == {
        f"{n}_scan" for n in (*FIT_STATEMENTS, *BLOCKS_STATEMENTS, "placement_leaf_total")
    }
    assert SCAN_FORMS == {
        "placement_free_blocks": "placement_free_blocks_scan",
        "placement_leaf_page": "placement_leaf_page_scan",
        "placement_domain_page": "placement_domain_page_scan",
        "reserve_batch_candidates": "reserve_batch_candidates_scan",  # the batch reserves' (fastpath.candidate_read)
    }
    for name in ("reservations/reserve_in_host_batch", "reservations/reserve_release_batch"):
        seek, scan = registry[name], registry[f"{name}_scan"]
        assert seek.parameters == scan.parameters and "coalesce(h.free_gpus, -1)" in scan.text
        assert "h.free_gpus = want" in seek.text and "h.free_gpus = want" not in scan.text
    leaves, leaves_scan = registry["placement_leaves_fit"], registry["placement_leaves_fit_scan"]
    assert "coalesce(s.tier = 'leaf', false)" in leaves_scan.text and "s.tier = 'leaf' AND" in leaves.text
    assert leaves.parameters == leaves_scan.parameters and "block_host" not in leaves.text  # no blocks, no hints
    domains, domains_scan = registry["placement_domains_fit"], registry["placement_domains_fit_scan"]
    assert "d.free_gpus = want" in domains.text and "d.free_gpus = want" not in domains_scan.text
    assert "coalesce(d.free_gpus >=" in domains_scan.text
    hosts, hosts_scan = registry["placement_hosts_fit"], registry["placement_hosts_fit_scan"]
    assert "h.free_gpus = want" in hosts.text and "h.free_gpus = want" in hosts_scan.text  # measured: seek kept


def scan_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """A seek form's parameters as its scan form takes them (no probe hints; the domain statement
    no lazy page bound either)."""
    return taken_by(f"{name}_scan", params)


def alike(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A candidate statement's row with its collected lists in one order: `found` by unit, a
    domain's hosts, `hosts` by name and each host's free GPUs by uuid. A `collect` keeps the order
    its rows came in, which follows the plan (Neo4j may plan the seek and the scan form, or one
    form at two times, differently: a CI run failed on it), and the engine sorts what it reads
    (`_fit_pages`, `choose_in_domain`). What an ORDER BY ranks is compared as it comes: the
    blocks, and a leaf's `members`."""

    def unit(u: dict[str, Any] | None) -> Any:
        if u is None:
            return None
        return {**u, "hosts": sorted(u["hosts"])} if "hosts" in u else u

    def host(h: dict[str, Any]) -> dict[str, Any]:
        return {**h, "gpus": sorted(h.get("gpus") or [], key=repr)}

    return [
        {
            **row,
            "found": sorted((unit(u) for u in row["found"]), key=repr),
            "hosts": sorted((host(h) for h in row["hosts"]), key=lambda h: str(h.get("name"))),
        }
        for row in rows
    ]


def leaves_params(min_free: int, skip: int, limit: int) -> dict[str, Any]:
    """placement_leaves_fit's parameters (test_queries_run's example), a page of leaves."""
    fit = taken_by("placement_leaves_fit", fit_params(8, 72, 5))  # no host filters; the blocks are read beside it
    return {
        **fit,
        "ready": False,  # as place() reads a page (a diagnosis's probe: True)
        "min_free": min_free,
        "gpus": min_free,
        "per_host": 0,
        "host_min": 1,
        "need": min_free,
        "extra": 2,
        "fullest_first": True,
        "fullest_leaves": False,
        "even": False,
        "model": "h100",
        "prefilter_models": [],
        "known": [""],
        "skip": skip,
        "limit": limit,
    }


async def test_the_scan_form_reads_the_same_blocks(gateway: Gateway) -> None:
    hosts_scan = scan_params("placement_hosts_fit", fit_params(0, 0, 1))
    empty = await gateway.read("placement_hosts_fit_scan", {**hosts_scan, "blocks": 3})
    assert empty == []  # an empty graph: no unit to read, no row, as the seek form
    await load(gateway, "nvl72")
    cluster = await load(gateway, "superpod-h100:sus=1")
    rng = random.Random(7)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.5])
    with_free = len(await gateway.read("largest_free_hosts", {"top": 128, "limit": 1000}))
    for blocks in (1, 4, 9, 200):
        seek = await gateway.read("placement_hosts_fit", fit_params(8, 72, blocks))
        scan = await gateway.read("placement_hosts_fit_scan", {**hosts_scan, "blocks": blocks})
        assert alike(scan) == alike(seek), blocks
        assert len(seek[0]["host_blocks"]) == min(blocks, with_free)
        alone = await gateway.read("placement_cluster_blocks", blocks_params(8, 72, blocks))
        alone_scan = await gateway.read(
            "placement_cluster_blocks_scan", scan_params("placement_cluster_blocks", blocks_params(8, 72, blocks))
        )
        assert alone == alone_scan == [{k: seek[0][k] for k in ("host_blocks", "domain_blocks")}], blocks
    # The leaf statement: its page of leaves read by a scan too (placement_leaf_page_scan).
    pages = []
    for min_free, skip, limit in ((1, 0, 2), (16, 0, 8), (16, 1, 1), (64, 0, 8), (10_000, 0, 2)):
        params = leaves_params(min_free, skip, limit)
        seek = await gateway.read("placement_leaves_fit", params)
        scan_leaves = await gateway.read("placement_leaves_fit_scan", scan_params("placement_leaves_fit", params))
        assert alike(scan_leaves) == alike(seek), (min_free, skip, limit)
        pages.append(len(seek))
    assert pages[0] == 1 and pages[-1] == 0  # a page of leaves, and none hold 10,000
    # The domain statement (test_queries_run's example shape, a page of NVLink domains).
    for first, n in ((8, 8), (1, 1), (16, 16)):
        params = {**fit_params(8, 72, 5), "first_size": first, "last_size": 576, "step": 1, "n": n}
        params.pop("mode")
        seek = await gateway.read("placement_domains_fit", params)
        assert alike(
            await gateway.read("placement_domains_fit_scan", scan_params("placement_domains_fit", params))
        ) == alike(seek), first
        assert seek and seek[0]["found"], first


async def leaf_pages_alike(gateway: Gateway) -> list[tuple[int, str]]:
    """Every leaf page, one leaf at a time, seek and scan form side by side; the leaves read."""
    read: list[tuple[int, str]] = []
    for skip in range(64):
        params = leaves_params(1, skip, 1)
        seek = await gateway.read("placement_leaves_fit", params)
        assert alike(
            await gateway.read("placement_leaves_fit_scan", scan_params("placement_leaves_fit", params))
        ) == alike(seek), skip
        if not seek:
            break
        assert seek[0]["scanned"] == 1
        (unit,) = seek[0]["found"]
        read.append((unit["free"], unit["unit"]))
    assert read == sorted(read)  # best fit first, ties by name, none twice
    for skip, limit in ((0, 3), (1, 2), (2, 4), (len(read) - 1, 3)):
        params = leaves_params(1, skip, limit)
        seek = await gateway.read("placement_leaves_fit", params)
        assert alike(
            await gateway.read("placement_leaves_fit_scan", scan_params("placement_leaves_fit", params))
        ) == alike(seek), skip
        assert sorted(u["unit"] for u in seek[0]["found"]) == sorted(n for _, n in read[skip : skip + limit])
    return read


async def test_the_scan_form_pages_leaves_alike_through_ties(gateway: Gateway) -> None:
    """Four idle scalable units: four rail-0 leaves, two of them tied at the same free count, so the
    name breaks the tie at a page boundary; then the demo cluster's other fabrics (leaves of other
    families)."""
    await load(gateway, "superpod-h100:sus=4")
    tied = await leaf_pages_alike(gateway)
    assert len(tied) == 4 and len({free for free, _ in tied}) < 4  # su2 and su3 tie (254 free)
    await with_test_queries(gateway).write("reset_graph")
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    assert len(await leaf_pages_alike(gateway)) >= 3


def host_params(first: int, last: int, step: int, skip: int, limit: int, **over: Any) -> dict[str, Any]:
    """placement_hosts_fit's parameters for a page of hosts over the sizes first..last."""
    return {**fit_params(8, 72, 5), "first_size": first, "last_size": last, "step": step, "n": min(first, last),
            "skip": skip, "limit": limit, "probe": skip + limit, **over}  # fmt: skip


def domain_params(first: int, last: int, step: int, skip: int, limit: int, **over: Any) -> dict[str, Any]:
    """placement_domains_fit's parameters for a page of NVLink domains over the sizes first..last."""
    params = host_params(first, last, step, skip, limit, **over)
    params.pop("mode")
    return params


async def test_the_scan_form_pages_hosts_and_domains_alike(gateway: Gateway) -> None:
    """The domain page (placement_domain_page_scan), and the host statement's scan form (its page
    still seeks): the same rows as the seek forms, best fit and spread, through ties one unit at a
    time, past the last unit, with a model, an exclusion and a stale cutoff, on a cluster of
    several models in use."""
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    cluster = await load(gateway, "superpod-h100:sus=1")
    rng = random.Random(13)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.4])
    some_host = cluster.hosts[3].hostname
    cases: list[tuple[str, dict[str, Any]]] = []
    for first, last, step in ((1, 128, 1), (8, 128, 1), (3, 6, 1), (128, 1, -1), (8, 1, -1), (200, 300, 1)):
        for skip, limit in ((0, 3), (2, 5), (0, 200)):
            cases.append(("placement_hosts_fit", host_params(first, last, step, skip, limit)))
            cases.append(("placement_hosts_fit", host_params(first, last, step, skip, limit, mode="domain")))
    for first, last, step in ((1, 576, 1), (8, 576, 1), (16, 72, 1), (576, 1, -1), (72, 8, -1), (600, 700, 1)):
        for skip, limit in ((0, 3), (1, 4), (0, 100)):
            cases.append(("placement_domains_fit", domain_params(first, last, step, skip, limit)))
    gb200 = {"model": "gb200", "prefilter_models": ["NVIDIA GB200"], "known": ["NVIDIA GB200", ""]}
    cases += [
        ("placement_hosts_fit", host_params(1, 128, 1, 0, 4, model="h100", exclude=[some_host])),
        ("placement_hosts_fit", host_params(1, 128, 1, 0, 4, model="a100")),  # not known: the substring test
        ("placement_hosts_fit", host_params(1, 128, 1, 0, 4, stale_before=1e18)),  # every host stale
        ("placement_domains_fit", domain_params(8, 576, 1, 0, 3, **gb200)),
        ("placement_domains_fit", domain_params(1, 576, 1, 0, 3, model="a100")),  # not known: the substring test
    ]
    for skip in range(40):  # one host at a time through the 4-free sizes' ties, and past them
        cases.append(("placement_hosts_fit", host_params(4, 8, 1, skip, 1)))
        cases.append(("placement_domains_fit", domain_params(4, 8, 1, skip, 1)))
    read = 0
    for name, params in cases:
        seek = await gateway.read(name, params)
        assert alike(await gateway.read(f"{name}_scan", scan_params(name, params))) == alike(seek), (name, params)
        read += len(seek[0]["found"]) if seek else 0
    assert read > 100  # the pages held units (not only empty answers)


@pytest.mark.parametrize("store", ["falkordb"])  # a FalkorDB plan: Neo4j leaves no stale entries to avoid
async def test_the_scan_form_reads_no_index_on_falkordb(gateway: Gateway) -> None:
    """The point of the form: no index walk for the blocks or the page of units, whose stale entries
    grow while a scheduler reserves (a bare `tie_bucket IN range(...)` was planned as an index scan)."""
    await load(gateway, "superpod-h100:sus=1")
    backend = gateway.backend
    graph = backend._database().select_graph(backend.graph_name)  # type: ignore[attr-defined]

    async def plan(name: str, params: dict[str, Any]) -> str:
        q = gateway.registry[name]
        text = graph._build_params_header({k: v for k, v in params.items() if k in q.parameters}) + q.falkordb_text
        return "\n".join(str(op) for op in await graph.execute_command("GRAPH.EXPLAIN", graph.name, text))

    blocks = ["block_host:Host", "block_domain:NVLinkDomain"]
    read = {
        "placement_leaves_fit": ["s:Switch"],  # its page; the blocks are read beside it
        "placement_hosts_fit": blocks,
        "placement_domains_fit": [*blocks, "d:NVLinkDomain"],
        "placement_cluster_blocks": blocks,
    }
    for name, params in (
        ("placement_hosts_fit", fit_params(8, 8, 3)),
        ("placement_domains_fit", domain_params(8, 576, 1, 0, 3)),
        ("placement_leaves_fit", leaves_params(16, 0, 2)),
        ("placement_cluster_blocks", blocks_params(8, 8, 3)),
    ):
        seek, scan = await plan(name, params), await plan(f"{name}_scan", params)
        labels = read[name]
        for label in labels:
            assert f"Node By Index Scan | ({label})" in seek, (name, label)
            assert f"Node By Index Scan | ({label})" not in scan, (name, label)
            assert f"Node By Label Scan | ({label})" in scan, (name, label)


def answers(result: PlacementResult) -> list[tuple[object, ...]]:
    return [
        (tuple(g.uuid for g in c.gpus), round(c.score, 9), c.largest_free_block_before, c.reason)
        for c in result.candidates
    ] + [(r.constraint, r.message) for r in result.infeasible]


async def test_the_engine_answers_alike_with_either_form(gateway: Gateway) -> None:
    await load(gateway, "demo:sus=1,nvl72_racks=1,a100_hosts=2,l40s_hosts=2")
    cluster = await load(gateway, "superpod-h100:sus=1")
    rng = random.Random(11)
    await occupy(gateway, [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < 0.4])
    clock = lambda: 1_000_000.0  # noqa: E731 - one instant for both engines
    scanning, seeking = PlacementEngine(gateway, clock=clock), PlacementEngine(gateway, clock=clock)
    seeking.scan_blocks_up_to = -1
    requests = [
        "1xH100",
        "4xH100 nvlink=full-mesh",
        "8xH100 nvlink=full-mesh limit=5",
        "16xGB200 nvlink=full-mesh",
        "2xA100 nvlink=any",
        "24xH100 ib-hops<=1",
        "16xH100 per-host=4 ib-hops<=1",
        "9xH100 nvlink=full-mesh",
    ]
    for text in requests:
        gateway.stats.clear()
        scanned = await scanning.place(parse_request(text))
        forms = {n for n, s in gateway.stats.items() if s.calls and n.endswith("_fit_scan")}
        assert forms and not {n for n, s in gateway.stats.items() if s.calls and n.endswith("_fit")}, text
        gateway.stats.clear()
        sought = await seeking.place(parse_request(text))
        assert not {n for n, s in gateway.stats.items() if s.calls and n.endswith("_fit_scan")}, text
        assert answers(scanned) == answers(sought), text
        assert [s.name for s in scanned.statements if s.name.endswith("_scan")], text


async def test_the_engine_keeps_the_largest_counts_it_saw(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    engine = PlacementEngine(gateway)
    assert engine.block_tops.params() == {"host_top": 128, "domain_top": 576}  # nothing read yet
    await engine.place(parse_request("4xH100 nvlink=full-mesh"))
    assert engine.block_tops.params() == {"host_top": 8, "domain_top": 8}


def test_a_hint_is_never_lowered() -> None:
    tops = BlockTops()
    tops.saw([{"unit": "a", "free": 8}], [{"unit": "d", "free": 72}])
    tops.saw([{"unit": "a", "free": 2}, None], [])  # type: ignore[list-item]
    assert tops.params() == {"host_top": 8, "domain_top": 72}
