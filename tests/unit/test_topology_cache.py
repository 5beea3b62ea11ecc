"""The topology cache's rules (graphsvc.placement.topology_cache), over plain rows."""

from __future__ import annotations

from graphsvc.placement.model import HOST_TOPOLOGY_GPU_FIELDS, HostMap, TopologyRow
from graphsvc.placement.topology_cache import TopologyCache


def live(name: str, key: str | None) -> HostMap:
    return HostMap(name=name, topology=key, received_at=1.0, site=None, gpus=[])


def read(name: str, key: str | None, *uuids: str) -> TopologyRow:
    gpus: list[list[object]] = [[u, i, *([None] * (len(HOST_TOPOLOGY_GPU_FIELDS) - 2))] for i, u in enumerate(uuids)]
    return TopologyRow(name=name, topology=key, rack="r1", scalable_unit=None, leaves=["leaf-1"], pod=None, gpus=gpus)


def test_a_host_is_read_when_its_key_is_new_changed_or_absent() -> None:
    cache = TopologyCache()
    assert cache.missing([live("a", "k1"), None]) == ["a"]
    cache.keep([read("a", "k1", "g0")])
    assert cache.missing([live("a", "k1")]) == []
    assert cache.missing([live("a", "k2")]) == ["a"]  # a new document or fabric
    assert cache.missing([live("a", None)]) == ["a"]  # no fingerprint: never trusted


def test_a_host_without_a_key_is_used_once_and_not_kept() -> None:
    cache = TopologyCache()
    got = cache.keep([read("a", None, "g0")])
    assert len(cache) == 0
    ((m, kept),) = cache.join([live("a", None)], got)
    assert m["name"] == "a" and set(kept.gpus) == {"g0"}


def test_what_was_just_read_wins_over_what_was_kept() -> None:
    cache = TopologyCache()
    cache.keep([read("a", "k1", "g0")])
    fresh = cache.keep([read("a", "k2", "g1")])
    ((_, kept),) = cache.join([live("a", "k2")], fresh)
    assert set(kept.gpus) == {"g1"} and kept.topology == "k2"
    ((_, kept),) = cache.join([live("a", "k2")], {})
    assert set(kept.gpus) == {"g1"}  # and is what is kept now


def test_a_host_in_neither_is_left_out() -> None:
    cache = TopologyCache()
    assert cache.join([live("gone", "k1")], {}) == []


def test_the_least_recently_used_host_goes_first() -> None:
    cache = TopologyCache(capacity=2)
    cache.keep([read("a", "k", "ga"), read("b", "k", "gb")])
    cache.join([live("a", "k")], {})  # a used: b is now the oldest
    cache.keep([read("c", "k", "gc")])
    assert len(cache) == 2
    assert cache.missing([live("a", "k"), live("b", "k"), live("c", "k")]) == ["b"]
