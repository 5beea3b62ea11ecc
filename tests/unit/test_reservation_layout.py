"""Table tests for the pure layout planner: grow keeping the layout, shrink to the largest block."""

from __future__ import annotations

import pytest

from graphsvc.reservations.layout import Slot, layout_kept, plan_grow, plan_shrink, rail_aligned, replacement_plan


def host(name: str, indices: range | list[int], domain: str | None = None, leaf_prefix: str = "leaf") -> list[Slot]:
    """GPUs of a rail-optimised host: GPU i on rail i, rail i cabled to leaf `<prefix>-r<i>`."""
    return [Slot(f"{name}-g{i}", name, i, domain or f"d-{name}", f"{leaf_prefix}-r{i}", i) for i in indices]


@pytest.mark.parametrize(
    ("current", "pool", "add", "expect_hosts", "kept"),
    [
        # half a host grows into the other half of the same host (same NVLink domain)
        (host("a", range(4)), host("a", range(4, 8)) + host("b", range(8)), 4, {"a"}, True),
        # two half hosts grow by 4: two more rails on each, still aligned
        (
            host("a", range(2)) + host("b", range(2)),
            host("a", range(2, 8)) + host("b", range(2, 8)),
            4,
            {"a", "b"},
            True,
        ),
        # a full host grows by a host: the emptiest-fitting other host, same rails and leaves
        (host("a", range(8)), host("b", range(8)) + host("c", range(8)), 8, {"b"}, True),
        # a full host grows by a host, but only hosts on other leaves are free: not kept
        (host("a", range(8)), host("z", range(8), leaf_prefix="other"), 8, {"z"}, False),
    ],
)
def test_plan_grow(current: list[Slot], pool: list[Slot], add: int, expect_hosts: set[str], kept: bool) -> None:
    plan = plan_grow(current, pool, add, keep_layout=False)
    assert plan is not None
    assert len(plan.uuids) == add and len(set(plan.uuids)) == add
    assert {u.split("-g")[0] for u in plan.uuids} == expect_hosts
    assert plan.layout_kept is kept
    by = {s.uuid: s for s in pool}
    if kept:
        assert rail_aligned([*current, *(by[u] for u in plan.uuids)])


def dgx1(name: str, indices: range | list[int]) -> list[Slot]:
    """GPUs of a host with two GPUs per NIC (DGX-1, PCIe boards): GPU i on rail i // 2."""
    return [Slot(f"{name}-g{i}", name, i, f"d-{name}", f"leaf-r{i // 2}", i // 2) for i in indices]


@pytest.mark.parametrize(
    ("current", "pool", "add", "expect"),
    [
        # one GPU grows by two: two rails it does not use, one GPU each (it took every free GPU of
        # the chosen rails, 4 where 3 were asked: a probe's case)
        (dgx1("a", [0]), dgx1("a", range(1, 8)), 2, {"a-g2", "a-g4"}),
        # ... by three: every other rail, then the rail it uses (its second GPU)
        (dgx1("a", [0]), dgx1("a", range(1, 8)), 3, {"a-g2", "a-g4", "a-g6"}),
        (dgx1("a", [0]), dgx1("a", range(1, 8)), 4, {"a-g1", "a-g2", "a-g4", "a-g6"}),
        # four rails on a new host: one GPU per rail, not two of rail 0 and two of rail 1
        (dgx1("a", [0, 2, 4, 6]), dgx1("b", range(8)), 4, {"b-g0", "b-g2", "b-g4", "b-g6"}),
    ],
)
def test_grow_takes_one_gpu_per_rail_where_rails_have_two(
    current: list[Slot], pool: list[Slot], add: int, expect: set[str]
) -> None:
    plan = plan_grow(current, pool, add)
    assert plan is not None and set(plan.uuids) == expect and len(plan.uuids) == add


def test_grow_refuses_to_break_the_layout_unless_allowed() -> None:
    current = host("a", range(8))
    pool = host("z", range(8), leaf_prefix="other")
    assert plan_grow(current, pool, 8) is None
    assert plan_grow(current, pool, 8, keep_layout=False) is not None


def test_grow_in_an_nvl72_domain_stays_in_the_domain() -> None:
    rack = [s for t in range(4) for s in host(f"t{t}", range(4), domain="rack1")]
    other = [s for t in range(4) for s in host(f"u{t}", range(4), domain="rack2")]
    current = rack[:4]
    plan = plan_grow(current, rack[4:] + other, 8)
    assert plan is not None and plan.layout_kept
    assert all(u.startswith("t") for u in plan.uuids)


def test_layout_kept_rules() -> None:
    a = host("a", range(4))
    assert layout_kept(a, host("a", range(4, 8)), domain_room=True)
    assert not layout_kept(a, host("b", range(4)), domain_room=True)  # left its domain though there was room
    assert layout_kept(a, host("b", range(4)), domain_room=False)
    assert not layout_kept(a, host("b", [0, 1, 2, 5]), domain_room=False)  # rails no longer aligned


@pytest.mark.parametrize(
    ("current", "remove", "host_free", "expected"),
    [
        # the job spans a (2 GPUs) and b (6): freeing a's 2 makes a whole free host
        (host("a", [6, 7]) + host("b", range(6)), 2, {"a": 6, "b": 2}, {"a-g6", "a-g7"}),
        # removing 4 of 8 on one host: the highest indices go (low ranks stay)
        (host("a", range(8)), 4, {"a": 0}, {"a-g4", "a-g5", "a-g6", "a-g7"}),
        # two hosts with 4 each, b's other half free: empty b rather than thin both
        (host("a", range(4)) + host("b", range(4)), 4, {"a": 0, "b": 4}, {f"b-g{i}" for i in range(4)}),
    ],
)
def test_plan_shrink(current: list[Slot], remove: int, host_free: dict[str, int], expected: set[str]) -> None:
    assert set(plan_shrink(current, remove, host_free, {})) == expected


def test_shrink_never_empties_the_job() -> None:
    assert plan_shrink(host("a", range(2)), 2, {"a": 0}, {}) == []
    assert plan_shrink(host("a", range(2)), 0, {"a": 0}, {}) == []


def test_replacement_keeps_the_failed_gpus_rails() -> None:
    current = host("a", range(8)) + host("b", range(8))
    failed = host("b", range(8))
    pool = host("c", range(8)) + host("d", range(4))
    out = replacement_plan(current, failed, pool)
    assert out is not None
    mapping, kept = out
    assert kept
    assert mapping == {f"b-g{i}": f"c-g{i}" for i in range(8)}


def test_a_reservation_deleted_while_read_reads_as_not_found() -> None:
    """Neo4j, read committed: a reservation the history pruner deletes while a read reaches it
    comes back as an empty map; it is gone, not a row without an id."""
    from graphsvc.reservations.rows import as_reservation_rows

    kept = {"reservation": {"id": "r1", "state": "released"}, "gpus": []}
    rows = as_reservation_rows([{"reservation": {}, "gpus": []}, kept, {"reservation": None, "gpus": []}])
    assert [dict(r) for r in rows] == [kept]
