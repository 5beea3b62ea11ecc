"""#17.4: a failed GPU is never free — not in any counter (host, NVLink domain, leaf), not in the
cluster summary or /metrics, not in a placement answer — and taking or freeing one never makes
the counters drift, on both stores."""

from __future__ import annotations

from topo_facts import HostFacts, HostMetrics
from topo_facts.models import GPUMetrics, Health

from graphsvc.ingest.service import ingest_host, ingest_metrics
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.read import health as health_read
from graphsvc.read.browse import Browse
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import later, load, one_unit


async def set_health(gw: Gateway, host: HostFacts, uuid: str, health: Health) -> None:
    """As a collector's metrics push reports it (the frequent path)."""
    metrics = HostMetrics(hostname=host.hostname, collected_at=later(), gpus=[GPUMetrics(uuid=uuid, health=health)])
    assert (await ingest_metrics(gw, metrics)).applied


async def counters(gw: Gateway, host: str) -> tuple[int, list[int], int]:
    """(host counter, its NVLink domains' counters, the sum of the leaf counters above it)."""
    [row] = await gw.read("reservations/free_counts", {"hosts": [host]})
    leaves = await gw.read("fabric_switches", {"cluster": "default", "tier": "leaf", "after": "", "first": 100})
    domains = sorted(int(d["free"]) for d in row["domains"])
    return int(row["host_free"]), domains, sum(int(r["free_gpus"]) for r in leaves)


async def no_drift(gw: Gateway) -> None:
    assert await gw.read("counter_drift") == []


async def test_a_failed_gpu_is_in_no_free_counter(gateway: Gateway) -> None:
    cluster = await load(gateway, one_unit(2, seed=3))
    host = cluster.hosts[0]
    n = len(host.gpus)
    rails = len({a.nic for a in host.gpu_nic_affinity})
    before = await counters(gateway, host.hostname)
    assert before[0] == n and before[1] == [n]
    victim = host.gpus[2].uuid

    await set_health(gateway, host, victim, Health.FAILED)
    host_free, domains, leaves = await counters(gateway, host.hostname)
    assert (host_free, domains) == (n - 1, [n - 1])
    assert leaves == before[2] - rails  # every leaf the host is cabled to counts the host's free GPUs
    await no_drift(gateway)

    summary = await Browse(gateway, stale_after_s=600).cluster_summary()
    assert summary.free_gpus == summary.gpus - 1
    metrics = await health_read.metrics(gateway, stale_after_s=600)
    assert sum(metrics.free_by_model.values()) == summary.gpus - 1

    for text in ("8 limit=20", "8 allow-unhealthy limit=20", "1 allow-unhealthy limit=20"):
        result = await PlacementEngine(gateway).place(parse_request(text))
        offered = {g.uuid for c in result.candidates for g in c.gpus}
        assert victim not in offered, text

    # Degraded still counts (it runs work; placement skips it by default): failed -> degraded
    # is a recovery for the counters, degraded -> failed a loss.
    await set_health(gateway, host, victim, Health.DEGRADED)
    assert (await counters(gateway, host.hostname))[:2] == (n, [n])
    await set_health(gateway, host, victim, Health.FAILED)
    assert (await counters(gateway, host.hostname))[:2] == (n - 1, [n - 1])
    await set_health(gateway, host, victim, Health.FAILED)  # no change, no move
    assert (await counters(gateway, host.hostname))[:2] == (n - 1, [n - 1])
    await set_health(gateway, host, victim, Health.OK)
    assert await counters(gateway, host.hostname) == before
    await no_drift(gateway)


async def test_full_host_facts_with_a_failed_gpu_recount(gateway: Gateway) -> None:
    cluster = await load(gateway, one_unit(2, seed=3))
    host = cluster.hosts[1]
    n = len(host.gpus)
    gpus = [g.model_copy(update={"health": Health.FAILED}) if i in (0, 5) else g for i, g in enumerate(host.gpus)]
    sick = host.model_copy(update={"gpus": gpus, "collected_at": later()})
    assert (await ingest_host(gateway, sick)).applied
    assert (await counters(gateway, host.hostname))[:2] == (n - 2, [n - 2])
    await no_drift(gateway)
    well = host.model_copy(update={"collected_at": later()})
    assert (await ingest_host(gateway, well)).applied
    assert (await counters(gateway, host.hostname))[:2] == (n, [n])
    await no_drift(gateway)


async def test_releasing_a_reservation_whose_gpu_failed_keeps_counters_right(gateway: Gateway) -> None:
    cluster = await load(gateway, one_unit(2, seed=3))
    host = cluster.hosts[0]
    n = len(host.gpus)
    svc = ReservationService(gateway)
    held = [g.uuid for g in host.gpus[:3]]
    out = await svc.reserve(holder="job", gpus=held)
    assert isinstance(out, Reservation)
    assert (await counters(gateway, host.hostname))[:2] == (n - 3, [n - 3])

    await set_health(gateway, host, held[0], Health.FAILED)  # fails while held: no counter moves
    assert (await counters(gateway, host.hostname))[:2] == (n - 3, [n - 3])
    await no_drift(gateway)

    await svc.release(out.id)  # two GPUs come back free; the failed one is free but not counted
    assert (await counters(gateway, host.hostname))[:2] == (n - 1, [n - 1])
    await no_drift(gateway)

    await set_health(gateway, host, held[0], Health.OK)  # repaired: counted again
    assert (await counters(gateway, host.hostname))[:2] == (n, [n])
    await no_drift(gateway)


async def test_taking_and_freeing_a_failed_gpu_by_uuid_moves_no_counter(gateway: Gateway) -> None:
    cluster = await load(gateway, one_unit(2, seed=3))
    host = cluster.hosts[0]
    n = len(host.gpus)
    await set_health(gateway, host, host.gpus[7].uuid, Health.FAILED)
    svc = ReservationService(gateway)
    out = await svc.reserve(holder="drain", gpus=[host.gpus[6].uuid, host.gpus[7].uuid])
    assert isinstance(out, Reservation)
    assert (await counters(gateway, host.hostname))[:2] == (n - 2, [n - 2])
    await no_drift(gateway)
    await svc.release(out.id)
    assert (await counters(gateway, host.hostname))[:2] == (n - 1, [n - 1])
    await no_drift(gateway)
