"""The owners kept for the ownership check (graphsvc/reservations/owners.py)."""

from __future__ import annotations

from graphsvc.reservations.owners import Owners


def test_a_reservation_not_seen_is_unknown_and_one_without_an_owner_is_known() -> None:
    owners = Owners()
    assert owners.lookup("rsv-a") == (False, None)
    owners.remember("rsv-a", None)  # stored before reservations had owners
    assert owners.lookup("rsv-a") == (True, None)


def test_the_newest_are_kept_and_seeing_one_again_makes_it_newest() -> None:
    owners = Owners(size=2)
    owners.remember("rsv-a", "sched-1")
    owners.remember("rsv-b", "sched-2")
    owners.remember("rsv-a", "sched-1")  # read again: now the newest
    owners.remember("rsv-c", "sched-3")  # pushes out the oldest, rsv-b
    assert len(owners) == 2
    assert owners.lookup("rsv-b") == (False, None)
    assert owners.lookup("rsv-a") == (True, "sched-1") and owners.lookup("rsv-c") == (True, "sched-3")
