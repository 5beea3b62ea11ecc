"""The grouped bottleneck (`select.bottleneck`, per host / NVLink-domain group) equals the
per-pair definition (`select.bottleneck_pairs`): hand-computed rows, then random GPU sets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.placement.model import PCIE_GBPS, Gpu
from graphsvc.placement.select import bottleneck, bottleneck_pairs


def gpu(
    uuid: str,
    host: str,
    domain: str | None = None,
    kind: str | None = None,
    lanes: float = 0.0,
    nic: float | None = 400.0,
    direct: dict[str, float] | None = None,
) -> Gpu:
    g = Gpu(
        uuid=uuid, index=int(uuid.lstrip("g") or 0), host=host, model="H100", memory_mib=81559, state="free",
        health="ok", temperature_c=None, utilization_pct=None, nvlink_domain=domain, domain_kind=kind, nic=None,
        rail=None, nic_rate_gbps=nic, via=None, leaf=None, switch_gbps=lanes,
    )  # fmt: skip
    g.direct = dict(direct or {})
    return g


def hgx(host: str, n: int, first: int = 0, lanes: float = 900.0, nic: float = 400.0) -> list[Gpu]:
    return [gpu(f"g{first + i}", host, f"{host}-nvs", "nvswitch", lanes, nic) for i in range(n)]


def nvl72(host: str, n: int, first: int, rack: str = "rack", lanes: float = 1800.0) -> list[Gpu]:
    return [gpu(f"g{first + i}", host, rack, "fabric-clique", lanes) for i in range(n)]


def pair(host: str, dom: str, first: int, bw: float = 600.0) -> list[Gpu]:
    """Two GPUs joined by a direct NVLink bridge (A100 pairs)."""
    a, b = f"g{first}", f"g{first + 1}"
    return [gpu(a, host, dom, "direct", direct={b: bw}), gpu(b, host, dom, "direct", direct={a: bw})]


LANELESS = gpu("g7", "t2", "rack", "fabric-clique", 0.0)
LANELESS_SLOW_NIC = gpu("g7", "t2", "rack", "fabric-clique", 0.0, 200.0)
CASES: list[tuple[str, list[Gpu], float | None]] = [
    ("one GPU", hgx("a", 1), None),
    ("one HGX board", hgx("a", 8), 900.0),
    ("an HGX board with a slower GPU", [*hgx("a", 7), gpu("g7", "a", "a-nvs", "nvswitch", 450.0)], 450.0),
    ("a GPU without lanes on the board: PCIe", [*hgx("a", 3), gpu("g3", "a", "a-nvs", "nvswitch", 0.0)], PCIE_GBPS),
    ("two boards: the NIC (400 Gb/s = 50 GB/s)", [*hgx("a", 4), *hgx("b", 4, 4)], 50.0),
    ("two boards, one slower NIC", [*hgx("a", 4), *hgx("b", 3, 4), *hgx("b", 1, 7, nic=200.0)], 25.0),
    ("no NVLink in one host: PCIe", [gpu("g0", "a"), gpu("g1", "a")], PCIE_GBPS),
    ("unknown NIC speed across hosts: 12.5 GB/s", [gpu("g0", "a", nic=None), gpu("g1", "b")], 12.5),
    ("NVL72 trays in one rack: the fabric", [*nvl72("t1", 4, 0), *nvl72("t2", 4, 4)], 1800.0),
    ("NVL72 trays in two racks: the NIC", [*nvl72("t1", 4, 0, "r1"), *nvl72("t2", 4, 4, "r2")], 50.0),
    ("a laneless NVL72 GPU: PCIe on its tray", [*nvl72("t1", 4, 0), *nvl72("t2", 3, 4), LANELESS], PCIE_GBPS),
    ("a laneless NVL72 GPU alone on its tray: its NIC", [*nvl72("t1", 4, 0), LANELESS_SLOW_NIC], 25.0),
    ("a lone slow NVL72 GPU on another tray", [*nvl72("t1", 4, 0), *nvl72("t2", 1, 4, lanes=900.0)], 900.0),
    ("a bridged pair", pair("a", "p", 0), 600.0),
    ("two bridged pairs: PCIe between them", [*pair("a", "p0", 0), *pair("a", "p1", 2)], PCIE_GBPS),
    ("a direct edge between hosts (irregular)", [gpu("g0", "a", direct={"g1": 100.0}), gpu("g1", "b")], 100.0),
    (
        "one domain, two kinds (irregular)",
        [gpu("g0", "a", "d", "nvswitch", 900.0), gpu("g1", "b", "d", "fabric-clique", 900.0)],
        50.0,
    ),
]


@pytest.mark.parametrize(("gpus", "expected"), [(g, e) for _, g, e in CASES], ids=[c[0] for c in CASES])
def test_grouped_bottleneck(gpus: list[Gpu], expected: float | None) -> None:
    assert bottleneck(gpus) == expected
    assert bottleneck_pairs(gpus) == expected


KINDS = [None, "nvswitch", "fabric-clique", "direct"]


@st.composite
def gpu_sets(draw: st.DrawFn) -> list[Gpu]:
    """A few hosts and domains, mixed kinds and lanes, NICs of several speeds, direct edges
    (mostly inside a host, sometimes across), GPUs in any order."""
    n = draw(st.integers(min_value=0, max_value=24))
    hosts = draw(st.integers(min_value=1, max_value=5))
    domains = draw(st.integers(min_value=1, max_value=4))
    kind_of = {f"d{d}": draw(st.sampled_from(KINDS)) for d in range(domains)}
    mixed = draw(st.booleans())  # sometimes one domain carries two kinds (irregular input)
    gpus = []
    for i in range(n):
        dom = draw(st.sampled_from([None, *kind_of]))
        kind = kind_of.get(dom) if dom else None
        if mixed and dom is not None and draw(st.booleans()):
            kind = draw(st.sampled_from(KINDS))
        gpus.append(
            gpu(f"g{i}", f"h{draw(st.integers(0, hosts - 1))}", dom, kind,
                draw(st.sampled_from([0.0, 450.0, 900.0, 1800.0])), draw(st.sampled_from([None, 200.0, 400.0])))
        )  # fmt: skip
    for _ in range(draw(st.integers(0, n))):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if a != b and (gpus[a].host == gpus[b].host or draw(st.integers(0, 9)) == 0):
            bw = draw(st.sampled_from([0.0, 100.0, 600.0]))
            gpus[a].direct[gpus[b].uuid] = bw
            if draw(st.booleans()):
                gpus[b].direct[gpus[a].uuid] = bw
    return draw(st.permutations(gpus))


@settings(max_examples=600, deadline=None)
@given(gpu_sets())
def test_grouped_bottleneck_equals_every_pair(gpus: list[Gpu]) -> None:
    assert bottleneck(gpus) == bottleneck_pairs(gpus)
