"""Where each host sits in the fabric (graphsvc.ingest.fabric_plan): its leaves, the spines and
cores above them, and its pod."""

from __future__ import annotations

from topo_facts import FabricFacts, FabricSwitch, NICUplink, SwitchTier, SwitchUplink

from graphsvc.ingest.fabric_plan import host_positions


def fabric(host_leaf: dict[str, str], leaf_spines: dict[str, list[str]]) -> FabricFacts:
    spines = sorted({s for ss in leaf_spines.values() for s in ss})
    return FabricFacts(
        cluster="c", source="test",
        switches=[FabricSwitch(name=leaf, tier=SwitchTier.LEAF) for leaf in sorted(set(host_leaf.values()))]
        + [FabricSwitch(name=s, tier=SwitchTier.SPINE) for s in spines],
        nic_uplinks=[NICUplink(host=h, nic="mlx5_0", switch=leaf, bandwidth_gbps=50) for h, leaf in host_leaf.items()],
        switch_uplinks=[SwitchUplink(lower=leaf, upper=s, bandwidth_gbps=100)
                        for leaf, ss in leaf_spines.items() for s in ss],
    )  # fmt: skip


def pods(host_leaf: dict[str, str], leaf_spines: dict[str, list[str]]) -> dict[str, str]:
    return {str(p["host"]): str(p["pod"]) for p in host_positions(fabric(host_leaf, leaf_spines))}


def test_a_clean_pod_is_named_by_its_first_spine() -> None:
    assert pods({"a": "L1", "b": "L2"}, {"L1": ["S1", "S2"], "L2": ["S1", "S2"]}) == {"a": "pod:S1", "b": "pod:S1"}


def test_a_leaf_that_lost_a_spine_uplink_stays_in_its_pod() -> None:
    """L1 lost its cable to S1: it still shares S2 with the others, 3 switches from them."""
    spines = {"L1": ["S2", "S3"], "L2": ["S1", "S2", "S3"], "L3": ["S1", "S2", "S3"]}
    assert set(pods({"a": "L1", "b": "L2", "c": "L3"}, spines).values()) == {"pod:S2"}


def test_leaves_that_share_no_spine_are_not_one_pod() -> None:
    """L1-S1-L2-S2-L3: a and c are 5 switches apart. Pods joined through any shared spine (a
    union-find) put them in one pod, 3 apart (a probe's case). Every pod's leaves share its spine."""
    spines = {"L1": ["S1"], "L2": ["S1", "S2"], "L3": ["S2"]}
    placed = pods({"a": "L1", "b": "L2", "c": "L3"}, spines)
    assert placed["a"] != placed["c"]
    for pod in set(placed.values()):
        members = [h for h, p in placed.items() if p == pod]
        leaves = {"a": "L1", "b": "L2", "c": "L3"}
        assert set.intersection(*(set(spines[leaves[h]]) for h in members))


def test_a_leaf_under_no_spine_is_a_pod_of_its_own() -> None:
    assert pods({"a": "L1", "b": "L2"}, {"L2": ["S1"]}) == {"a": "pod:L1", "b": "pod:S1"}


def under_core(facts: FabricFacts, lower: list[str]) -> FabricFacts:
    """`facts` with a core switch C above the named switches."""
    ups = [SwitchUplink(lower=name, upper="C", bandwidth_gbps=100) for name in lower]
    core = FabricSwitch(name="C", tier=SwitchTier.CORE)
    uplinks = [*facts.switch_uplinks, *ups]
    return facts.model_copy(update={"switches": [*facts.switches, core], "switch_uplinks": uplinks})


def positions(facts: FabricFacts) -> dict[str, tuple[object, object]]:
    return {str(p["host"]): (p["spines"], p["cores"]) for p in host_positions(facts)}


def test_each_host_learns_the_spines_above_its_leaves_and_the_cores_above_those() -> None:
    """Dual plane: a's leaves hang under S1 (plane 1) and Z (plane 2), b's under S2 and Z; only S1
    and S2 reach the core. A pod each (S1, S2) said 5 between them where Z joins them in 3."""
    facts = under_core(fabric({"a": "L1", "b": "L2"}, {"L1": ["S1", "Z"], "L2": ["S2", "Z"]}), ["S1", "S2"])
    assert positions(facts) == {"a": (["S1", "Z"], ["C"]), "b": (["S2", "Z"], ["C"])}


def test_the_switch_above_a_leaf_counts_whatever_its_tier() -> None:
    """A two-tier fabric whose top is named core (leaf -> core uplinks): its hosts had no spine
    and no core, and hosts under two leaves were said to have no path (a review's case)."""
    facts = under_core(fabric({"a": "L1", "b": "L2"}, {}), ["L1", "L2"])
    assert positions(facts) == {"a": (["C"], []), "b": (["C"], [])}


def test_a_leaf_under_no_spine_gives_its_hosts_no_spine_and_no_core() -> None:
    assert positions(fabric({"a": "L1", "b": "L2"}, {})) == {"a": ([], []), "b": ([], [])}
