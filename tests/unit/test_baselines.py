"""The baselines pick what their real counterparts would, on small hand-built topologies."""

from __future__ import annotations

import asyncio

import pytest

from graphsvc.bench.policies import HostView, Topology, first_fit, kueue_bestfit, slurm_tree
from graphsvc.bench.run import bench


def topo(free: dict[str, int], groups: dict[str, str], racks: dict[str, str] | None = None) -> Topology:
    """Hosts of 8 GPUs (one NVLink domain each); `free` says how many of each are free."""
    hosts = {}
    for name in free:
        gpus: list[tuple[str, str | None]] = [(f"{name}-g{i}", f"{name}/nvl") for i in range(8)]
        hosts[name] = HostView(name, (racks or {}).get(name, f"rack-{name}"), frozenset([groups[name]]), "pod", gpus)
    t = Topology(hosts)
    t.free = {f"{name}-g{i}" for name, n in free.items() for i in range(n)}
    return t


def hosts_of(t: Topology, gpus: list[str] | None) -> list[str]:
    assert gpus is not None
    return sorted({t.host_of[g] for g in gpus})


def test_first_fit_takes_hosts_in_name_order_and_spreads() -> None:
    t = topo({"a": 2, "b": 8, "c": 4}, {"a": "L1", "b": "L1", "c": "L2"})
    assert hosts_of(t, first_fit(t, 4)) == ["a", "b"]  # count only: spreads a 4-GPU job over two hosts


def test_slurm_tree_picks_the_tightest_switch_then_best_fit_host() -> None:
    t = topo({"a": 8, "b": 8, "c": 4, "d": 2}, {"a": "L1", "b": "L1", "c": "L2", "d": "L2"})
    # Both leaves can hold 4 GPUs; L2 has 6 free (tighter than L1's 16); inside it host c fits exactly.
    assert hosts_of(t, slurm_tree(t, 4)) == ["c"]
    # 12 GPUs fit only under L1: the lowest switch with room.
    assert hosts_of(t, slurm_tree(t, 12)) == ["a", "b"]
    # 20 GPUs need the pod level: the fullest hosts first.
    assert hosts_of(t, slurm_tree(t, 20)) == ["a", "b", "c"]


def test_kueue_bestfit_takes_the_emptiest_block_then_the_tightest_rack() -> None:
    racks = {"a": "r1", "b": "r2", "c": "r3", "d": "r3"}
    t = topo({"a": 8, "b": 3, "c": 1, "d": 2}, {"a": "B1", "b": "B1", "c": "B2", "d": "B2"}, racks)
    # Block B1 has the most free capacity (11); inside it, rack r2 (3 free) is the tightest that fits 2.
    assert hosts_of(t, kueue_bestfit(t, 2)) == ["b"]
    assert hosts_of(t, kueue_bestfit(t, 12)) == ["a", "b", "d"]  # no block holds 12: spans blocks
    assert kueue_bestfit(t, 20) is None


def test_policies_answer_none_when_nothing_fits() -> None:
    t = topo({"a": 1}, {"a": "L1"})
    assert first_fit(t, 2) is None and slurm_tree(t, 2) is None and kueue_bestfit(t, 2) is None


@pytest.mark.parametrize(
    ("policies", "trace", "jobs", "message"),
    [
        (["nope"], "generated", 5, "unknown policy nope"),
        (["service"], "/no/such/trace.csv", 5, "is not a file"),
        (["service"], "generated", 0, "at least 1"),
        (["service"], "shaped:load=x", 5, "could not convert"),
        (["service"], "shaped:speed=2", 5, "expected load"),
    ],
)
def test_bench_rejects_bad_input_before_starting_a_store(
    policies: list[str], trace: str, jobs: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        asyncio.run(bench("demo", trace, policies, jobs, seeds=[1], progress=False))
