"""The on-disk spool: order, supersession, bounds, crash leftovers, rejects."""

from __future__ import annotations

from pathlib import Path

from topo_collector.spool import Spool


def test_replays_oldest_first_and_newest_facts_supersede(tmp_path: Path) -> None:
    s = Spool(tmp_path)
    s.put("facts", "a", b"a1")
    s.put("metrics", "a", b"am1")
    s.put("facts", "b", b"b1")
    s.put("metrics", "a", b"am2")  # supersedes am1 only
    assert [e.body() for e in s.pending()] == [b"a1", b"b1", b"am2"]
    s.put("facts", "a", b"a2")  # supersedes a1 and am2
    assert [e.body() for e in s.pending()] == [b"b1", b"a2"]


def test_ack_removes_and_sequence_keeps_growing(tmp_path: Path) -> None:
    s = Spool(tmp_path)
    first = s.put("facts", "a", b"1")
    s.ack(first)
    second = s.put("facts", "a", b"2")
    assert second.seq > 0 and len(s) == 1


def test_bounded_drops_metrics_first(tmp_path: Path) -> None:
    s = Spool(tmp_path, max_entries=3)
    for h in "abc":
        s.put("facts", h, b"f")
    s.put("metrics", "a", b"m")
    s.put("facts", "d", b"f")
    kinds = [(e.kind, e.host) for e in s.pending()]
    assert len(kinds) == 3
    assert ("metrics", "a") not in kinds


def test_interrupted_write_is_discarded_on_start(tmp_path: Path) -> None:
    (tmp_path / "000000000001-facts-a.tmp").write_bytes(b"half")
    s = Spool(tmp_path)
    assert len(s) == 0 and not list(tmp_path.glob("*.tmp"))


def test_rejected_entries_move_aside(tmp_path: Path) -> None:
    s = Spool(tmp_path)
    e = s.put("facts", "a", b"bad")
    s.reject(e, "HTTP 422")
    assert len(s) == 0
    assert (tmp_path / "rejected" / e.path.name).read_bytes() == b"bad"
