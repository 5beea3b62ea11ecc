"""MIG slice choice (placement.mig.choose_slices) and the `2x 3g.40gb` text form, without a store."""

from __future__ import annotations

import pytest

from graphsvc.placement.mig import FreeSlice, SliceScope, choose_slices
from graphsvc.placement.request import PlacementRequest, RequestError, format_request, parse_request


def pool(spec: str) -> list[FreeSlice]:
    """'a:0=2 a:1=1 b:0=3': host a GPU 0 has 2 free slices, GPU 1 one, host b GPU 0 three."""
    out = []
    for part in spec.split():
        where, n = part.split("=")
        host, gpu = where.split(":")
        for gi in range(int(n)):
            out.append(
                FreeSlice(
                    uuid=f"MIG-{host}-{gpu}-{gi}",
                    profile="3g.40gb",
                    gpu_instance_id=gi + 1,
                    memory_mib=40448,
                    gpu=f"GPU-{host}-{gpu}",
                    gpu_index=int(gpu),
                    gpu_model="NVIDIA H100 80GB HBM3",
                    host=host,
                )
            )
    return out


def shape(candidate: object) -> list[str]:
    """A candidate's slices as 'host:gpu' per slice."""
    return [f"{s.host}:{s.gpu_index}" for s in candidate.slices]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("free", "count", "scope", "first", "others"),
    [
        # One GPU that holds them all beats spreading, even when another host has more free.
        ("a:0=1 a:1=1 b:0=2", 2, SliceScope.GPU, ["b:0", "b:0"], 0),
        # Best fit among GPUs: the GPU with the fewest free slices that still fits comes first.
        ("a:0=7 b:0=2", 2, SliceScope.GPU, ["b:0", "b:0"], 1),
        # Ties on fit: host name, then GPU index.
        ("b:1=2 a:3=2 a:2=2", 2, SliceScope.GPU, ["a:2", "a:2"], 2),
        # No GPU alone: one host, fullest GPUs first (fewest GPUs used).
        ("a:0=1 a:1=1 a:2=1 b:0=2 b:1=1", 3, SliceScope.HOST, ["b:0", "b:0", "b:1"], 1),
        # Among hosts: fewer GPUs used beats a better fit.
        ("a:0=1 a:1=1 a:2=1 b:0=2 b:1=2", 3, SliceScope.HOST, ["b:0", "b:0", "b:1"], 1),
        # No host alone: as few hosts as possible, most free first.
        ("a:0=1 b:0=2 c:0=1 c:1=1", 4, SliceScope.HOSTS, ["b:0", "b:0", "c:0", "c:1"], 0),
    ],
)
def test_tiers_and_tie_breaks(free: str, count: int, scope: SliceScope, first: list[str], others: int) -> None:
    found = choose_slices(pool(free), count, limit=5)
    assert found[0].scope is scope
    assert shape(found[0]) == first
    assert len(found) == 1 + others
    assert all(len(c.slices) == count and len({s.uuid for s in c.slices}) == count for c in found)


def test_slices_within_a_gpu_go_in_instance_id_order() -> None:
    free = list(reversed(pool("a:0=3")))
    (c,) = choose_slices(free, 2)
    assert [s.gpu_instance_id for s in c.slices] == [1, 2]


def test_preferred_hosts_break_ties_only() -> None:
    assert shape(choose_slices(pool("a:0=2 b:0=2"), 2, prefer_hosts=["b"])[0]) == ["b:0", "b:0"]
    assert shape(choose_slices(pool("a:0=2 b:0=3"), 2, prefer_hosts=["b"])[0]) == ["a:0", "a:0"]  # fit first


@pytest.mark.parametrize(("free", "count"), [("", 1), ("a:0=1", 2), ("a:0=1 b:0=1", 3), ("a:0=3", 0)])
def test_not_enough_free_slices_is_no_candidate(free: str, count: int) -> None:
    assert choose_slices(pool(free) if free else [], count) == []


def test_limit_caps_the_candidates() -> None:
    assert len(choose_slices(pool("a:0=1 b:0=1 c:0=1 d:0=1"), 1, limit=2)) == 2


@pytest.mark.parametrize(
    ("text", "count", "profile", "canonical"),
    [
        ("2x 3g.40gb", 2, "3g.40gb", "2x 3g.40gb"),
        ("2x3g.40gb", 2, "3g.40gb", "2x 3g.40gb"),
        ("1x 1G.10GB model=H100 limit=5", 1, "1g.10gb", "1x 1g.10gb model=H100 limit=5"),
        ("7x 1g.5gb exclude=a allow-unhealthy", 7, "1g.5gb", "7x 1g.5gb allow-unhealthy exclude=a"),
    ],
)
def test_text_form(text: str, count: int, profile: str, canonical: str) -> None:
    req = parse_request(text)
    assert (req.gpus, req.mig_profile) == (count, profile)
    assert format_request(req) == canonical
    assert parse_request(canonical) == req


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2x 9g.40gb", "not a MIG profile"),
        ("2x 3g.40", "not a MIG profile"),
        ("2x 3g.40gb nvlink=any", "not by nvlink"),
        ("2x 3g.40gb per-host=1 rail-aligned", "not by gpus_per_host, rail_aligned"),
        ("0x 3g.40gb", "between 1 and"),
    ],
)
def test_invalid_mig_requests_name_the_field(text: str, message: str) -> None:
    with pytest.raises(RequestError, match=message):
        parse_request(text)


def test_whole_gpu_requests_are_unchanged() -> None:
    assert parse_request("8xH100").mig_profile is None
    assert PlacementRequest(gpus=2, mig_profile="3g.40gb").validated().mig_profile == "3g.40gb"


def test_the_client_sends_the_profile() -> None:
    """`graphsvc reserve "2x 3g.40gb"` must ask for slices, not for two whole GPUs."""
    from graphsvc.client import request_input

    sent = request_input("2x 3g.40gb model=H100")
    assert (sent["gpus"], sent["migProfile"], sent["model"]) == (2, "3g.40gb", "H100")
    assert "migProfile" not in request_input("2xH100")
