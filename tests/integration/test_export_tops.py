"""Topology exports name a top switch only over pods a core joins, and put each leaf group under
one pod (both stores; a probe's cases). One top over every pod joined leaf islands, and hosts that
lost a cable all went under one "no-pod": Slurm, Kueue and Volcano would place jobs across hosts
with no path. Four imports of the real OCI BM.GPU.H100.8 dump (tests/integration/test_fabric_planes.py).
"""

from __future__ import annotations

from topo_facts import SwitchTier

from graphsvc.exports.model import cluster_view
from graphsvc.exports.render import ExportFormat, render
from graphsvc.ingest.service import ingest_host
from graphsvc.store.gateway import Gateway
from tests.integration.test_fabric_planes import SU, fabric, hosts, load

TWO_PODS = [("X", "SA", SwitchTier.SPINE), ("Y", "SB", SwitchTier.SPINE)]


def leaf(host: str, rail: int) -> str | None:
    return ("X" if SU[host] == "A" else "Y") if rail < 8 else None


async def test_one_top_over_pods_a_core_joins(gateway: Gateway) -> None:
    cored = [*TWO_PODS, ("SA", "C", SwitchTier.CORE), ("SB", "C", SwitchTier.CORE)]
    await load(gateway, hosts(), fabric(hosts(), leaf, cored))
    view = await cluster_view(gateway, "default")
    assert view.tops == {"default-top": sorted(view.pods)} and len(view.pods) == 2
    tree = (await render(gateway, ExportFormat.SLURM_TREE, "default", None)).text
    assert "SwitchName=default-top" in tree


async def test_no_top_over_pods_no_core_joins(gateway: Gateway) -> None:
    await load(gateway, hosts(), fabric(hosts(), leaf, TWO_PODS))
    view = await cluster_view(gateway, "default")
    assert view.tops == {} and len(view.pods) == 2
    for fmt in (ExportFormat.SLURM_TREE, ExportFormat.VOLCANO, ExportFormat.TOPOGRAPH_LABELS):
        assert "-top" not in (await render(gateway, fmt, "default", None)).text, fmt


async def test_hosts_that_lost_a_cable_stay_under_their_own_pods(gateway: Gateway) -> None:
    """Rails 0-7 under X (pod SA) or Y (pod SB), rails 8-15 under P (pod SP, a core over all
    three spines). a0 and b0 drop their rails 8-15 NICs: the pod a host document cannot name is
    cleared, and both went under one "no-pod" switch (a0 and b0 are 5 hops apart, via the core)."""
    ups = [*TWO_PODS, ("P", "SP", SwitchTier.SPINE), *((s, "C", SwitchTier.CORE) for s in ("SA", "SB", "SP"))]
    facts = hosts()
    await load(gateway, facts, fabric(facts, lambda h, r: leaf(h, r) or "P", ups))
    for host in (facts[0], facts[2]):
        kept = [n for n in host.nics if (n.rail or 0) < 8]
        names = {n.name for n in kept}
        affinity = [a for a in host.gpu_nic_affinity if a.nic in names]
        await ingest_host(gateway, host.model_copy(update={"nics": kept, "gpu_nic_affinity": affinity}))
    view = await cluster_view(gateway, "default")
    assert "no-pod" not in view.pods
    parents = [pod for group in view.leaf_groups for pod, groups in view.pods.items() if group in groups]
    assert len(parents) == len(view.leaf_groups)  # each group under one pod
    pod_of_host = {h: pod for pod, groups in view.pods.items() for g in groups for h in view.leaf_groups[g]}
    assert pod_of_host["a0"] != pod_of_host["b0"]
