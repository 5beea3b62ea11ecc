"""Blast-radius rules, one table row each, on a hand-built fabric (no store)."""

from __future__ import annotations

import pytest

from graphsvc.placement.impact import (
    Effect,
    Holding,
    HostState,
    ImpactTarget,
    SwitchState,
    UnknownTarget,
    impact,
)

# Two leaves under two spines; h1,h2 on leafA (h2 also on leafB, a second rail); h3 on leafB only.
HOSTS = [
    HostState("h1", 4, frozenset({"leafA"}), frozenset({"h1-nvs"})),
    HostState("h2", 2, frozenset({"leafA", "leafB"}), frozenset({"h2-nvs"})),
    HostState("h3", 8, frozenset({"leafB"}), frozenset({"h3-nvs"})),
]
SWITCHES = [
    SwitchState("leafA", "leaf", frozenset({"spine1", "spine2"})),
    SwitchState("leafB", "leaf", frozenset({"spine1"})),
    SwitchState("spine1", "spine", frozenset()),
    SwitchState("spine2", "spine", frozenset()),
]


def hold(res: str, host: str, index: int, leaf: str) -> Holding:
    return Holding(res, f"team-{res}", f"{host}-g{index}", host, index, f"{host}-nvs", leaf)


HOLDINGS = [
    # r-local: two GPUs on h1 (NVLink only). r-ab: h1 + h3 across leaves. r-a: h1 + h2 on leafA.
    hold("r-local", "h1", 0, "leafA"), hold("r-local", "h1", 1, "leafA"),
    hold("r-ab", "h1", 2, "leafA"), hold("r-ab", "h3", 0, "leafB"),
    hold("r-a", "h1", 3, "leafA"), hold("r-a", "h2", 0, "leafA"), hold("r-a", "h2", 1, "leafB"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "name", "peer", "expected", "hosts_cut", "free_lost"),
    [
        # A host takes every reservation with a GPU on it.
        (
            ImpactTarget.HOST,
            "h1",
            None,
            {"r-local": Effect.CUT_OFF, "r-ab": Effect.CUT_OFF, "r-a": Effect.CUT_OFF},
            ["h1"],
            4,
        ),
        (ImpactTarget.HOST, "h3", None, {"r-ab": Effect.CUT_OFF}, ["h3"], 8),
        # A domain slows reservations with two or more GPUs in it.
        (ImpactTarget.NVLINK_DOMAIN, "h1-nvs", None, {"r-local": Effect.SLOWED}, [], 0),
        (ImpactTarget.NVLINK_DOMAIN, "h2-nvs", None, {"r-a": Effect.SLOWED}, [], 0),
        # leafB: h3 (only leafB) leaves the fabric: r-ab cut; r-a's h2 GPU on rail leafB slowed.
        (ImpactTarget.SWITCH, "leafB", None, {"r-ab": Effect.CUT_OFF, "r-a": Effect.SLOWED}, ["h3"], 8),
        # leafA: h1 leaves the fabric: both multi-host jobs touching h1 are cut; r-local needs no fabric.
        (ImpactTarget.SWITCH, "leafA", None, {"r-ab": Effect.CUT_OFF, "r-a": Effect.CUT_OFF}, ["h1"], 4),
        # spine1: leafB loses its only uplink: r-ab (leafA<->leafB) cut; r-a stays on leafA.
        (ImpactTarget.SWITCH, "spine1", None, {"r-ab": Effect.CUT_OFF}, ["h3"], 0),
        # spine2: leafA keeps spine1: cross-leaf traffic slowed.
        (ImpactTarget.SWITCH, "spine2", None, {"r-ab": Effect.SLOWED}, [], 0),
        (ImpactTarget.LINK, "leafA", "spine1", {"r-ab": Effect.SLOWED}, [], 0),
        (ImpactTarget.LINK, "leafB", "spine1", {"r-ab": Effect.CUT_OFF}, ["h3"], 0),
    ],
)
def test_rules(
    target: ImpactTarget,
    name: str,
    peer: str | None,
    expected: dict[str, Effect],
    hosts_cut: list[str],
    free_lost: int,
) -> None:
    out = impact(target, name, HOLDINGS, HOSTS, SWITCHES, peer)
    assert {r.id: r.effect for r in out.reservations} == expected
    assert out.hosts_cut_off == hosts_cut
    assert out.free_gpus_lost == free_lost and out.free_gpus_left == 14 - free_lost
    assert out.holders == sorted(f"team-{r}" for r in expected)


def test_ranks_are_positions_in_the_reservation() -> None:
    out = impact(ImpactTarget.HOST, "h2", HOLDINGS, HOSTS, SWITCHES)
    (r,) = out.reservations
    assert r.ranks == [1, 2] and r.gpu_uuids == ["h2-g0", "h2-g1"] and r.hosts == ["h2"]


def test_domain_failure_counts_free_gpus_that_lose_nvlink() -> None:
    out = impact(ImpactTarget.NVLINK_DOMAIN, "h3-nvs", HOLDINGS, HOSTS, SWITCHES)
    assert out.reservations == [] and out.free_gpus_losing_nvlink == 8


@pytest.mark.parametrize(
    ("target", "name", "peer"),
    [
        (ImpactTarget.HOST, "h9", None),
        (ImpactTarget.NVLINK_DOMAIN, "nope", None),
        (ImpactTarget.SWITCH, "leafZ", None),
        (ImpactTarget.LINK, "leafB", "spine2"),
    ],
)
def test_unknown_targets(target: ImpactTarget, name: str, peer: str | None) -> None:
    with pytest.raises(UnknownTarget):
        impact(target, name, HOLDINGS, HOSTS, SWITCHES, peer)
