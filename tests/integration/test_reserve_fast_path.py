"""The one-statement reserve (match and take) on both stores: what it takes, the counters it
moves by deltas, how concurrent requests spread, and that other shapes still get the general search."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.placement.request import parse_request
from graphsvc.reservations.fastpath import SCAN_EVERY_HOST_UP_TO, candidate_read, fast_path_mode, slot
from graphsvc.reservations.service import Conflict, Infeasible, Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.integration.test_reservations import invariants
from tests.queries import with_test_queries

TTL = 600
# The two batch reserves: the same candidates and answers, read by a free-count index seek or by a
# scan of every host (fastpath.candidate_read picks by cluster size); the page tests run both.
BATCH_STATEMENTS = ("reservations/reserve_in_host_batch", "reservations/reserve_in_host_batch_scan")


async def counters_agree(gw: Gateway) -> None:
    assert await gw.read("counter_drift") == []


def one_statement_calls(gw: Gateway) -> int:
    """Calls of the match-and-take statement, alone or group-committed."""
    names = ("reservations/reserve_in_host", "reservations/reserve_in_host_scan", *BATCH_STATEMENTS)
    return sum(gw.stats[n].calls for n in names if n in gw.stats)


def test_which_requests_take_the_one_statement_path() -> None:
    assert fast_path_mode(parse_request("8xH100 nvlink=full-mesh")) == "full-mesh"
    assert fast_path_mode(parse_request("4xH100 nvlink=any")) == "any"
    assert fast_path_mode(parse_request("1xH100 nvlink=full-mesh")) == "none"  # one GPU: no pair
    assert fast_path_mode(parse_request("3xL40S")) == "none"
    assert fast_path_mode(parse_request("16xH100 per-host=8")) is None
    assert fast_path_mode(parse_request("8xH100 mem>=80")) is None
    assert fast_path_mode(parse_request("8xH100 packing=spread")) is None
    assert fast_path_mode(parse_request("8xH100 temp<=70")) is None
    assert fast_path_mode(parse_request("8xH100 exclusive")) is None  # busy GPUs: judged by the general search
    assert fast_path_mode(parse_request("8xH100 fp8")) is None
    assert fast_path_mode(parse_request("8xH100 prefer=a")) is None


def test_one_host_reserves_scan_every_host_of_a_small_cluster_and_seek_on_a_large_one() -> None:
    for name in ("reservations/reserve_in_host", "reservations/reserve_in_host_batch"):
        assert candidate_read(name, 0) == candidate_read(name, SCAN_EVERY_HOST_UP_TO) == f"{name}_scan"
        assert candidate_read(name, SCAN_EVERY_HOST_UP_TO + 1) == name


async def test_the_service_picks_the_batch_statement_by_the_hosts_it_counted(gateway: Gateway) -> None:
    """One SU (31 hosts): concurrent reserves are group-committed through the scanning statement,
    after one count of the hosts (kept with the GPU models)."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    made = await asyncio.gather(
        *(svc.reserve(holder=f"c{i}", request=parse_request("2xH100 nvlink=full-mesh"), ttl_s=TTL) for i in range(6))
    )
    assert all(isinstance(r, Reservation) for r in made)
    assert svc.engine.facts.hosts == 31
    assert gateway.stats["reservations/host_count"].calls == 1
    assert gateway.stats["reservations/reserve_in_host_batch_scan"].calls >= 1
    seeks = gateway.stats.get("reservations/reserve_in_host_batch")
    assert seeks is None or seeks.calls == 0
    await invariants(gateway, 0.0)
    await counters_agree(gateway)


def test_slots_are_stable_per_request_and_differ_across_requests() -> None:
    assert slot("k1", 0) == slot("k1", 0)
    assert slot("k1", 1) == slot("k1", 0) + 1
    assert len({slot(f"rsv-{i}", 0) % 8 for i in range(64)}) > 1


@pytest.mark.parametrize("group_commit", [True, False])
async def test_one_host_request_takes_a_full_mesh_on_one_host_and_moves_the_counters(
    gateway: Gateway, group_commit: bool
) -> None:
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway, group_commit=group_commit)
    out = await svc.reserve(holder="a", request=parse_request("4xH100 nvlink=full-mesh"), ttl_s=TTL)
    assert isinstance(out, Reservation), out
    assert len(out.gpus) == 4 and len({g.host for g in out.gpus}) == 1
    assert one_statement_calls(gateway) == 1
    assert "reservations/reserve_gpus" not in gateway.stats  # the general path did not run
    await counters_agree(gateway)
    await svc.release(out.id)
    await counters_agree(gateway)


async def test_best_fit_host_is_preferred(gateway: Gateway) -> None:
    """A host already partly used (fewer free GPUs, still enough) is taken before empty ones."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    first = await svc.reserve(holder="a", gpus=[g.uuid for g in cluster.hosts[3].gpus[:4]], ttl_s=TTL)
    assert isinstance(first, Reservation)
    out = await svc.reserve(holder="b", request=parse_request("4xH100 nvlink=full-mesh"), ttl_s=TTL)
    assert isinstance(out, Reservation)
    assert {g.host for g in out.gpus} == {cluster.hosts[3].hostname}
    await counters_agree(gateway)


@pytest.mark.parametrize("scan_up_to", [SCAN_EVERY_HOST_UP_TO, -1], ids=["scan", "seek"])
async def test_concurrent_reserves_spread_and_never_share_a_gpu(gateway: Gateway, scan_up_to: int) -> None:
    """Without group commit: sixteen single statements race, spread by their slots, retry the next
    (both forms of the statement: one SU scans every host; the seek is forced here)."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway, group_commit=False, scan_every_host_up_to=scan_up_to)
    outs = await asyncio.gather(
        *(svc.reserve(holder=f"c{i}", request=parse_request("8xH100 nvlink=full-mesh"), ttl_s=TTL) for i in range(16))
    )
    made = [o for o in outs if isinstance(o, Reservation)]
    assert len(made) == 16
    uuids = [g.uuid for o in made for g in o.gpus]
    assert len(uuids) == len(set(uuids)) == 128
    await invariants(gateway, 0.0)
    await counters_agree(gateway)
    # Spread: the one-statement path answered most of them (a lost race retries the next candidate).
    assert gateway.stats[candidate_read("reservations/reserve_in_host", 31, scan_up_to)].calls >= 16
    # Each answered from what its statement returned (no read back), as a later read gives it.
    assert "reservations/reservation_get" not in gateway.stats
    for o in made:
        assert o == await svc.get(o.id)
    for o in made:
        await svc.release(o.id)
    await counters_agree(gateway)


async def test_full_mesh_on_direct_attached_nvlink_falls_back_to_the_general_search(gateway: Gateway) -> None:
    """DGX-1 cube-mesh: no switched domain, so the statement finds nothing and the clique search answers."""
    await load(gateway, "dgx1:hosts=1")
    svc = ReservationService(gateway)
    out = await svc.reserve(holder="a", request=parse_request("4xV100 nvlink=full-mesh"), ttl_s=TTL)
    assert isinstance(out, (Reservation, Infeasible, Conflict)), out
    assert one_statement_calls(gateway) >= 1
    if isinstance(out, Reservation):
        assert "reservations/reserve_gpus" in gateway.stats
    await counters_agree(gateway)


async def test_unknown_model_is_infeasible_not_a_fast_path_miss(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=2")
    svc = ReservationService(gateway)
    out = await svc.reserve(holder="a", request=parse_request("2xH100"), ttl_s=TTL)
    assert isinstance(out, Infeasible)
    assert one_statement_calls(gateway) == 0  # no model matched: nothing to take


def _batch(asks: list[tuple[int, str]], models: list[str]) -> dict[str, object]:
    requests = [
        {"n": n, "link": 0, "props": {"id": rid, "holder": "b", "state": "active", "created_at": 1.0,
                                      "expires_at": 1e12, "gpu_count": n, "idempotency_key": rid}}
        for n, rid in asks
    ]  # fmt: skip
    return {"requests": requests, "sizes": sorted({n for n, _ in asks}), "models": models, "model": "", "exclude": [],
            "stale_before": -1.0, "scan": 64, "now": 0.0}  # fmt: skip


@pytest.mark.parametrize("statement", BATCH_STATEMENTS)
async def test_one_batch_statement_gives_each_request_its_own_gpus(gateway: Gateway, statement: str) -> None:
    """Requests of one batch that want the same best-fit host never share a GPU; one that cannot
    be served gets no reservation while the others commit."""
    cluster = await load(gateway, "l40s:hosts=2")
    models = sorted({g.model for h in cluster.hosts for g in h.gpus})
    per_host = len(cluster.hosts[0].gpus)
    asks = [(1, "r1"), (per_host - 1, "r2"), (per_host, "r3"), (per_host, "r4-too-many")]
    rows = await gateway.write(statement, _batch(asks, models))
    assert sorted(rows[0]["ids"]) == ["r1", "r2", "r3"]
    svc = ReservationService(gateway)
    made = {r.id: r for r in await svc.get_many(ids=["r1", "r2", "r3"])}
    uuids = [g.uuid for r in made.values() for g in r.gpus]
    assert len(uuids) == len(set(uuids)) == 2 * per_host
    assert {len(r.gpus) for r in made.values()} == {1, per_host - 1, per_host}
    assert len({g.host for g in made["r1"].gpus + made["r2"].gpus}) == 1  # best fit: r2 fills r1's host
    await invariants(gateway, 0.0)
    await counters_agree(gateway)


async def test_concurrent_reserves_are_group_committed(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    assert svc.group is not None
    outs = await asyncio.gather(
        *(svc.reserve(holder=f"c{i}", request=parse_request("2xH100 nvlink=full-mesh"), ttl_s=TTL) for i in range(24))
    )
    assert all(isinstance(o, Reservation) for o in outs)
    assert svc.group.items == 24 and svc.group.batches < 24  # several requests per statement
    await invariants(gateway, 0.0)
    await counters_agree(gateway)
    ids = [o.id for o in outs if isinstance(o, Reservation)]
    batches = svc.group.batches
    released = await asyncio.gather(*(svc.release(i) for i in [*ids, ids[0]]))  # one released twice at once
    assert all(isinstance(r, Reservation) and r.state == "released" for r in released)
    assert svc.group.items == 24 + 25 and svc.group.batches < batches + 25
    await counters_agree(gateway)
    taken = [g.uuid for o in outs if isinstance(o, Reservation) for g in o.gpus]
    assert not await gateway.read("reservations/gpu_holders", {"uuids": taken, "now": 0.0})  # all free again


async def test_two_batches_in_flight_only_where_the_store_runs_writes_one_at_a_time(gateway: Gateway) -> None:
    """FalkorDB runs writes one at a time, so two batches may be in the store at once (the second
    reads what the first committed); on Neo4j they would read the same free GPUs, so one."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    assert svc.group is not None
    warm = await svc.reserve(holder="warm", request=parse_request("1xH100"), ttl_s=TTL)  # the model list, read once
    assert isinstance(warm, Reservation)
    in_flight, peak = 0, 0
    run = svc.group.run

    async def counted(items: list) -> list:  # type: ignore[type-arg]
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await run(items)
        finally:
            in_flight -= 1

    svc.group.run = counted
    sizes = [1, 2, 4, 8]
    outs = await asyncio.gather(
        *(svc.reserve(holder=f"c{i}", request=parse_request(f"{sizes[i % 4]}xH100 nvlink=full-mesh"), ttl_s=TTL)
          for i in range(2 * svc.group.min_split))
    )  # fmt: skip
    assert all(isinstance(o, Reservation) for o in outs)
    assert peak == (2 if gateway.serial_writes else 1)
    taken = [g.uuid for o in outs if isinstance(o, Reservation) for g in o.gpus]
    assert len(taken) == len(set(taken)) == 15 * 4  # 4 of each size: no GPU handed out twice
    await invariants(gateway, 0.0)
    await counters_agree(gateway)
    released = await asyncio.gather(*(svc.release(o.id) for o in outs if isinstance(o, Reservation)))
    assert all(isinstance(r, Reservation) and r.state == "released" for r in released)
    await counters_agree(gateway)


async def test_batch_answers_come_from_the_write_and_match_what_is_stored(gateway: Gateway) -> None:
    """A batch's reserves and releases are answered from what the statement returned (no read
    back), each with its own reservation, equal to what a later read gives."""
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    sizes = [1, 2, 4, 8]
    outs = await asyncio.gather(
        *(
            svc.reserve(holder=f"c{i}", request=parse_request(f"{sizes[i % 4]}xH100 nvlink=full-mesh"), ttl_s=TTL,
                        labels=[f"l{i}"], priority=i)
            for i in range(16)
        )
    )  # fmt: skip
    made = [o for o in outs if isinstance(o, Reservation)]
    assert len(made) == 16 and svc.group is not None and svc.group.batches < 16
    assert "reservations/reservation_get" not in gateway.stats  # answered from the write
    assert [len(o.gpus) for o in made] == [sizes[i % 4] for i in range(16)]
    assert [o.labels for o in made] == [[f"l{i}"] for i in range(16)]
    for o in made:
        assert o == await svc.get(o.id)
    reads = gateway.stats["reservations/reservation_get"].calls
    released = await asyncio.gather(*(svc.release(o.id) for o in made))
    assert gateway.stats["reservations/reservation_get"].calls == reads  # answered from the write
    for o, r in zip(made, released, strict=True):
        assert isinstance(r, Reservation) and r.id == o.id and r.state == "released"
        assert r == await svc.get(o.id)
        assert {g.uuid for g in r.gpus} == {g.uuid for g in o.gpus} and not any(g.held for g in r.gpus)
    await counters_agree(gateway)


async def test_idempotency_key_lookups_of_concurrent_reserves_share_one_read(gateway: Gateway) -> None:
    await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    ask = parse_request("2xH100 nvlink=full-mesh")
    first = await svc.reserve(holder="a", request=ask, ttl_s=TTL, idempotency_key="k0")
    assert isinstance(first, Reservation)
    outs = await asyncio.gather(
        *(svc.reserve(holder="a", request=ask, ttl_s=TTL, idempotency_key=f"k{i}") for i in range(12))
    )
    assert outs[0] == first  # the key already used: its reservation, nothing new
    made = [o for o in outs if isinstance(o, Reservation)]
    assert len(made) == 12 and len({o.id for o in made}) == 12
    assert [o.idempotency_key for o in made] == [f"k{i}" for i in range(12)]
    assert svc.key_group is not None and svc.key_group.items == 13 and svc.key_group.batches < 13
    await counters_agree(gateway)


async def test_reserve_explains_an_infeasible_request_only_when_asked(gateway: Gateway) -> None:
    await load(gateway, "l40s:hosts=2")
    svc = ReservationService(gateway)

    def calls() -> int:
        return sum(s.calls for s in gateway.stats.values())

    start = calls()
    cheap = await svc.reserve(holder="a", request=parse_request("2xL40S nvlink=any"), ttl_s=TTL)
    assert isinstance(cheap, Infeasible) and [r.constraint for r in cheap.reasons] == ["placement"]
    middle = calls()
    full = await svc.reserve(holder="a", request=parse_request("2xL40S nvlink=any"), ttl_s=TTL, explain=True)
    assert isinstance(full, Infeasible) and full.reasons[0].constraint == "nvlink"
    assert calls() - middle > middle - start  # the diagnosis searched again


@pytest.mark.parametrize("statement", BATCH_STATEMENTS)
@pytest.mark.parametrize("scan", [1, 3, 12])
async def test_the_batch_reads_the_best_fit_hosts_of_a_cluster_with_every_free_count(
    gateway: Gateway, scan: int, statement: str
) -> None:
    """Hosts holding 0-8 free GPUs: the batch's candidates are, for each request size, the `scan`
    hosts of the fewest free GPUs that suffice (ties by name), as a sort of every host would give
    them, although its sorted pass reads only the counts its first streaming pass saw
    (reserve_in_host_batch); a larger request is served from its own size's page."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    models = sorted({g.model for h in cluster.hosts for g in h.gpus})
    svc = ReservationService(gateway)
    free: dict[str, int] = {}
    for i, host in enumerate(cluster.hosts):
        taken = (i * 5) % 9  # 0..8 taken, every count several times
        if taken:
            made = await svc.reserve(holder="setup", gpus=[g.uuid for g in host.gpus[:taken]], ttl_s=TTL)
            assert isinstance(made, Reservation)
        free[host.hostname] = len(host.gpus) - taken
    asks = [(3, "r1"), (3, "r2"), (2, "r3"), (7, "r4")]
    params = {**_batch(asks, models), "scan": scan}
    rows = await gateway.write(statement, params)
    # The reference: for each size, every host sorted by (free, name), the first `scan` with enough;
    # each request takes the first host of their union, in that order, with enough left (one
    # NVLink domain per host here).
    page = sorted({x for size in (2, 3, 7) for x in sorted((n, h) for h, n in free.items() if n >= size)[:scan]})
    left = {h: n for n, h in page}
    expected: dict[str, str] = {}
    for n, rid in asks:
        fit = next((h for _, h in page if left[h] >= n), None)
        if fit is not None:
            left[fit] -= n
            expected[rid] = fit
    got = (
        {str(rid): {str(g[3]) for g in taken} for rid, taken in zip(rows[0]["ids"], rows[0]["taken"], strict=True)}
        if rows
        else {}
    )
    assert got == {rid: {host} for rid, host in expected.items()}
    await counters_agree(gateway)


@pytest.mark.parametrize("statement", BATCH_STATEMENTS)
async def test_a_gpu_reaching_two_requests_of_a_batch_is_handed_to_neither(gateway: Gateway, statement: str) -> None:
    """The batch hands a GPU to one request at most even when the GPU shows in two of its groups
    (here a GPU in two NVLink domains; on Neo4j, a host read under two counts by a statement that
    raced a commit did the same): the requests sharing it get nothing and go on alone, the rest commit."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    models = sorted({g.model for h in cluster.hosts for g in h.gpus})
    healthy = sorted(h.hostname for h in cluster.hosts if all(g.health in (None, "ok") for g in h.gpus))
    first, second = healthy[:2]
    shared = next(h for h in cluster.hosts if h.hostname == first).gpus[0].uuid
    await with_test_queries(gateway).write("gpu_in_a_second_domain", {"uuid": shared, "domain": "test-extra-domain"})
    # Two hosts to choose from. The 1-GPU request takes the smallest group, the one-member domain
    # (`shared`); the 8-GPU request the first host's whole domain, `shared` too; the 2-GPU
    # request the second host.
    params = {**_batch([(1, "r1"), (8, "r2"), (2, "r3")], models),
              "exclude": [h.hostname for h in cluster.hosts if h.hostname not in (first, second)]}  # fmt: skip
    rows = await gateway.write(statement, params)
    assert rows and list(rows[0]["ids"]) == ["r3"]
    assert {str(g[3]) for taken in rows[0]["taken"] for g in taken} == {second}
    assert await gateway.read("reservations/gpu_holders", {"uuids": [shared], "now": 0.0}) == []
    await invariants(gateway, 0.0)


@pytest.mark.parametrize(
    ("first_size", "last_size", "exclude_first", "model"),
    [(1, 128, 0, "h100"), (3, 6, 0, "h100"), (2, 128, 7, ""), (1, 128, 0, "a100"), (9, 128, 0, "")],
)
async def test_the_single_statement_takes_the_same_gpus_in_both_forms(
    gateway: Gateway, first_size: int, last_size: int, exclude_first: int, model: str
) -> None:
    """reserve_in_host and reserve_in_host_scan on a cluster of every free count (and a host
    without a count): the same bounds, exclusions and model filter give the same page, so each
    form takes the same GPUs (released in between), or neither takes any."""
    cluster = await load(gateway, "superpod-h100:sus=1")
    svc = ReservationService(gateway)
    for i, host in enumerate(cluster.hosts[1:]):
        busy = (i * 5) % 9
        if busy:
            made = await svc.reserve(holder="setup", gpus=[g.uuid for g in host.gpus[:busy]], ttl_s=TTL)
            assert isinstance(made, Reservation)
    await with_test_queries(gateway).write("host_without_free_count", {"name": cluster.hosts[0].hostname})
    models = sorted({g.model for h in cluster.hosts for g in h.gpus})
    exclude = sorted(h.hostname for h in cluster.hosts)[:exclude_first]
    taken: dict[str, list[str]] = {}
    for form in ("reservations/reserve_in_host", "reservations/reserve_in_host_scan"):
        rid = f"same-{form.rsplit('/', 1)[1]}"
        props = {"id": rid, "holder": "t", "state": "active", "created_at": 1.0, "expires_at": 1e12, "gpu_count": 2,
                 "idempotency_key": rid}  # fmt: skip
        params = {"first_size": first_size, "last_size": last_size, "exclude": exclude, "model": model,
                  "models": models, "mode": "none", "n": 2, "k": 8, "scan": 4, "slot": 1, "now": 0.0,
                  "stale_before": -1.0, "props": props}  # fmt: skip
        rows = await gateway.write(form, params)
        held = await gateway.read("reservations/gpu_holders", {"uuids": [g.uuid for h in cluster.hosts for g in h.gpus],
                                                               "now": 0.0})  # fmt: skip
        taken[form] = sorted(str(r["uuid"]) for r in held if r["reservation"] == rid)
        assert bool(rows) == bool(taken[form])
        if rows:
            await svc.release(rid)
    assert taken["reservations/reserve_in_host"] == taken["reservations/reserve_in_host_scan"]
    if first_size <= 8 and model != "a100":
        assert taken["reservations/reserve_in_host"]  # the case is not vacuous
