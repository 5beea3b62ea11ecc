"""Hop counts from the switches above two hosts, and the groups the wide searches choose within
(graphsvc.placement.model: hops, hop_keys, hop_groups). Up to the lowest switch above both and
down again: a shared leaf is 1 hop, a shared spine 3, a shared core 5, none: no path."""

from __future__ import annotations

import pytest

from graphsvc.placement.model import Host, fabric_islands, hop_groups, hops


def host(name: str, leaves: list[str], spines: set[str] | None = None, cores: set[str] | None = None) -> Host:
    return Host(
        name,
        None,
        None,
        leaves,
        None,
        None,
        [],
        cluster="c",
        spines=frozenset(spines or ()),
        cores=frozenset(cores or ()),
    )


A = host("a", ["L1"], {"S1"}, {"C1"})


@pytest.mark.parametrize(
    ("other", "expected"),
    [
        (host("b", ["L1", "L9"], {"S9"}), 1),  # a shared leaf
        (host("b", ["L2"], {"S1"}, {"C1"}), 3),  # a shared spine
        (host("b", ["L2"], {"S2", "S1"}), 3),  # a second plane's spine (dual plane)
        (host("b", ["L2"], {"S2"}, {"C1"}), 5),  # a shared core
        (host("b", ["S1"], {"C1"}), 2),  # cabled to a's spine itself: S1 only
        (host("b", ["C1"]), 3),  # cabled to a's core itself: L1 - S1 - C1
        (host("b", ["L2"], {"C1"}), 4),  # its leaf straight under a's core: L1 - S1 - C1 - L2
        (host("b", ["L2"], {"S2"}, {"C2"}), None),  # pods no core joins
        (host("b", ["L2"]), None),  # a leaf island
        (host("b", []), None),  # no cable known
        (host("a", ["L7"]), 0),  # the host itself
    ],
)
def test_hops_count_the_lowest_shared_switch(other: Host, expected: int | None) -> None:
    assert hops(A, other) == expected and hops(other, A) == expected


def test_hosts_of_two_clusters_share_no_switch() -> None:
    b = host("b", ["L1"], {"S1"}, {"C1"})
    b.cluster = "other"
    assert hops(A, b) is None


def names(groups: list[list[Host]]) -> list[list[str]]:
    return [[h.name for h in g] for g in groups]


def test_a_clean_pod_is_one_group_whatever_its_spines() -> None:
    hosts = [host(n, [f"L{n}"], {"S1", "S2", "S3"}, {"C"}) for n in "abc"]
    assert names(hop_groups(hosts, 3)) == [["a", "b", "c"]]


def test_pods_are_groups_under_3_hops_and_one_group_under_5_when_a_core_joins_them() -> None:
    hosts = [host("a", ["L1"], {"S1"}, {"C"}), host("b", ["L2"], {"S2"}, {"C"}), host("c", ["L3"], {"S2"}, {"C"})]
    assert names(hop_groups(hosts, 3)) == [["a"], ["b", "c"]]
    assert names(hop_groups(hosts, 5)) == [["a", "b", "c"]]
    assert names(hop_groups(hosts, None)) == [["a", "b", "c"]]


def test_a_dual_plane_host_is_in_both_planes_groups() -> None:
    """a0 and b0 meet under plane 2's spine Z (3 hops), not under their own plane-1 spines; b0's
    own plane-1 group (SB: b0 alone) is inside Z's and is dropped."""
    hosts = [host("a0", ["A"], {"SA", "Z"}), host("a1", ["A"], {"SA"}), host("b0", ["B"], {"SB", "Z"})]
    assert names(hop_groups(hosts, 3)) == [["a0", "a1"], ["a0", "b0"]]


def test_leaf_islands_are_groups_of_their_own_under_any_limit() -> None:
    hosts = [host("a", ["X"]), host("b", ["X"]), host("c", ["Y"])]
    assert names(hop_groups(hosts, 5)) == [["a", "b"], ["c"]]
    assert names(hop_groups(hosts, 3)) == [["a", "b"], ["c"]]


def test_a_host_no_fabric_cables_is_in_no_group_under_a_limit() -> None:
    assert names(hop_groups([host("a", [])], 3)) == [] and names(hop_groups([host("a", [])], None)) == [["a"]]


def test_under_4_hops_a_core_groups_hosts_one_and_two_levels_below_it() -> None:
    """a's leaf is right under core C, b's two levels below it: 4 hops. Grouped by spines only
    (as under 3), `ib-hops<=4` refused what the oracle placed (a fuzzer's case); a core's group is
    no clique under 4, so the spines' groups inside it are kept."""
    a, b, c = host("a", ["L1"], {"C"}), host("b", ["L2"], {"S"}, {"C"}), host("c", ["L3"], {"S"}, {"C"})
    assert (hops(a, b), hops(b, c)) == (4, 3)
    assert names(hop_groups([a, b, c], 3)) == [["a"], ["b", "c"]]
    assert names(hop_groups([a, b, c], 4)) == [["a", "b", "c"], ["b", "c"]]


def test_fabric_islands_are_hosts_joined_by_any_switch_the_largest_unnamed() -> None:
    hosts = [host("a", ["X"]), host("b", ["X"]), host("c", ["Y"]), host("d", ["Z"], {"S"}), host("e", ["W"], {"S"})]
    hosts.append(host("f", []))  # no fabric: not the largest island's (it was), a unit of its own
    assert fabric_islands(hosts) == {"a": "", "b": "", "d": "#2", "e": "#2", "c": "#3", "f": "#no-fabric"}


def test_a_cluster_no_fabric_cables_is_one_unit() -> None:
    """No host cabled (a fabric never imported): no island is known, the cluster is one unit."""
    assert fabric_islands([host("a", []), host("b", [])]) == {}
