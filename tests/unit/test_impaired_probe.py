"""A probe's leaf page (placement_leaves_fit with $ready) calls a host ready by its counters when
Host.impaired_gpus says none of its GPUs could be refused (and the request has no per-GPU bound
beyond those facts): it reads none of that host's GPUs. The counter is a shortcut, never the
answer: a stale 0 (a GPU degraded behind it) opens a leaf Python then refuses, a missing counter or
a bound (a temperature limit) tests each GPU as before. Both stores."""

from __future__ import annotations

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load
from tests.queries import with_test_queries
from tests.unit.test_rail_probes import healthy, units

_REQ = PlacementRequest(gpus=32, gpus_per_host=8, rail_aligned=True, nvlink=NVLinkRequirement.NONE)
_HOT = PlacementRequest(
    gpus=32, gpus_per_host=8, rail_aligned=True, nvlink=NVLinkRequirement.NONE, max_temperature_c=80.0
)


def leaf_pages(gw: Gateway) -> int:
    return sum(stat.calls for name, stat in gw.stats.items() if name.startswith("placement_leaves_fit"))


async def probe(gw: Gateway, req: PlacementRequest, adopted: list[int]) -> tuple[bool, bool, int]:
    """(what `place` finds, what the probe answers, the host maps the probe's statements handed it)."""
    engine = PlacementEngine(gw)
    found = bool((await engine.place(req, explain_infeasible=False)).candidates)
    adopted.clear()
    pages = leaf_pages(gw)
    fits = await engine.fits(req)
    assert leaf_pages(gw) > pages  # the probe read a leaf page
    return found, fits, sum(adopted)


async def test_a_clean_hosts_gpus_are_not_read_and_a_stale_counter_changes_no_answer(
    gateway: Gateway, adopted: list[int]
) -> None:
    cluster = units(1, 4, seed=11)
    healthy(cluster, set())
    await load(gateway, cluster)
    names = [h.hostname for h in cluster.hosts]
    tq = with_test_queries(gateway)
    assert [r["impaired"] for r in await tq.read("host_impaired_counts", {"hosts": names})] == [0, 0, 0, 0]
    assert await probe(gateway, _REQ, adopted) == (True, True, 4)

    # GPU 0 of each host degraded behind every counter: free_gpus still 8, impaired_gpus still 0.
    for host in cluster.hosts:
        await tq.write("gpu_health_raw", {"uuid": host.gpus[0].uuid, "health": "degraded"})
    # The page judged the hosts by their counters, not their GPUs: it opened the leaf (its four
    # hosts' maps), and Python refused them: the same answer as `place`.
    assert await probe(gateway, _REQ, adopted) == (False, False, 4)
    # A request with a per-GPU bound the counter does not cover tests each GPU: the leaf stays shut.
    assert await probe(gateway, _HOT, adopted) == (False, False, 0)
    # No counter (a graph before v9) tests each GPU too.
    await tq.write("host_impaired_set", {"hosts": names, "value": None})
    assert await probe(gateway, _REQ, adopted) == (False, False, 0)
    # A counter above 0 (here: stale, the GPU healthy again behind it) tests each GPU: it fits.
    for host in cluster.hosts:
        await tq.write("gpu_health_raw", {"uuid": host.gpus[0].uuid, "health": "ok"})
    await tq.write("host_impaired_set", {"hosts": names, "value": 1})
    assert await probe(gateway, _REQ, adopted) == (True, True, 4)
