"""Randomised small clusters (hypothesis): whenever brute force finds a placement, so does the service,
and every candidate the service returns satisfies every constraint."""

from __future__ import annotations

import asyncio
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import NVLinkRequirement, PlacementRequest
from graphsvc.store.gateway import Gateway
from graphsvc.synthetic.clusters import SyntheticCluster, add_nvl72, add_pcie_hosts, add_spines, add_superpod_h100
from graphsvc.synthetic.hosts import a100_pcie, dgx1_v100, l40s
from tests.cluster_helpers import load, occupy
from tests.placement_oracle import check_candidate, feasible, snapshot
from tests.queries import with_test_queries

FAMILIES = ["h100", "a100", "l40s", "dgx1", "gb200"]
MODELS = {"h100": "H100", "a100": "A100", "l40s": "L40S", "dgx1": "V100", "gb200": "GB200"}


def small_cluster(family: str, hosts: int, seed: int) -> SyntheticCluster:
    c = SyntheticCluster("default")
    if family == "h100":
        leaves = add_superpod_h100(c, 1, seed=seed)
        c.hosts = c.hosts[:hosts]
        kept = {h.hostname for h in c.hosts}
        c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    elif family == "gb200":
        leaves = add_nvl72(c, 1, seed=seed)
        c.hosts = c.hosts[:hosts]
        kept = {h.hostname for h in c.hosts}
        c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
    else:
        builder = {"a100": a100_pcie, "l40s": l40s, "dgx1": dgx1_v100}[family]
        leaves = add_pcie_hosts(c, builder, hosts, seed=seed, prefix=family)
    add_spines(c, leaves, prefix="spine", sus=1)
    return c


requests = st.builds(
    PlacementRequest,
    gpus=st.integers(1, 12),
    nvlink=st.sampled_from(list(NVLinkRequirement)),
    gpus_per_host=st.sampled_from([None, None, 1, 2, 4]),
    max_ib_hops=st.sampled_from([None, 0, 1, 3]),
    same_nvlink_domain=st.booleans(),
    rail_aligned=st.sampled_from([False, False, True]),
    max_temperature_c=st.sampled_from([None, None, 60.0]),
    limit=st.just(3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    family=st.sampled_from(FAMILIES),
    hosts=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    occupancy=st.floats(0.0, 0.7),
    reqs=st.lists(requests, min_size=4, max_size=8),
)
def test_service_finds_what_brute_force_finds(
    gateway: Gateway,
    family: str,
    hosts: int,
    seed: int,
    occupancy: float,
    reqs: list[PlacementRequest],
) -> None:
    async def scenario() -> None:
        await with_test_queries(gateway).write("reset_graph")
        cluster = small_cluster(family, hosts, seed)
        await load(gateway, cluster)
        rng = random.Random(seed)
        taken = [g.uuid for h in cluster.hosts for g in h.gpus if rng.random() < occupancy]
        await occupy(gateway, taken)
        snap = await snapshot(gateway)
        engine = PlacementEngine(gateway)
        seeking = PlacementEngine(gateway)  # the candidate statements' seek forms, as on a large cluster
        seeking.scan_blocks_up_to = -1
        for base in reqs:
            if base.gpus_per_host is not None and base.gpus % base.gpus_per_host:
                base = base.with_(gpus_per_host=None)
            req = base.with_(model=MODELS[family])
            result = await engine.place(req, explain_infeasible=False)
            sought = await seeking.place(req, explain_infeasible=False)
            assert [[g.uuid for g in c.gpus] for c in sought.candidates] == [
                [g.uuid for g in c.gpus] for c in result.candidates
            ], req
            for c in result.candidates:
                assert check_candidate(snap, req, [g.uuid for g in c.gpus]) == [], (req, c.reason)
            if feasible(snap, req):
                assert result.candidates, f"brute force places {req} on {family} x{hosts}, the service does not"

    asyncio.get_event_loop().run_until_complete(scenario())
