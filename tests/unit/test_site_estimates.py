"""Estimates checked against numbers computed by hand (each row's arithmetic is in its comment)."""

from __future__ import annotations

import pytest

from graphsvc.sites import estimate as est
from graphsvc.sites.book import FactBook, Lookup, date_to_epoch
from graphsvc.sites.catalog import EXAMPLE_PRICES, FactIn, PriceCatalog, SiteCatalog, load_price_file
from graphsvc.sites.compare import Objective, PlacementView, SiteOption, evaluate, rank
from graphsvc.sites.estimate import JobProfile
from graphsvc.sites.model import CapacityKind, Fact, FactKind, Site, SiteKind, SiteLink

W = 6400.0  # GPU-hours at full speed

RUN_HOURS = [
    # (gpu_hours, comm_share, ref_gbps, gpus, bottleneck, speed, expected)
    (W, 0.0, 50.0, 64, 50.0, 1.0, 100.0),  # 6400/64 = 100
    (W, 0.2, 50.0, 64, 50.0, 1.0, 100.0),  # 100 * (0.8 + 0.2 * 50/50) = 100
    (W, 0.2, 50.0, 64, 25.0, 1.0, 120.0),  # 100 * (0.8 + 0.2 * 2) = 120
    (W, 0.2, 50.0, 64, 12.5 / 32, 1.0, 2640.0),  # 100 * (0.8 + 0.2 * 128) = 2640: a WAN link shared by 32 GPUs
    (W, 0.2, 50.0, 64, 900.0, 2.5, 100 * (0.32 + 0.2 / 18)),  # 100 * (0.8/2.5 + 0.2*50/900) = 33.11
    (W, 0.5, 50.0, 1, None, 1.0, 3200.0),  # one GPU: no peers, 6400 * 0.5 = 3200
    (800.0, 0.25, 25.0, 8, 450.0, 2.0, 100 * (0.375 + 0.25 / 18)),  # 100 * (0.75/2 + 0.25*25/450)
]


@pytest.mark.parametrize(("w", "c", "ref", "n", "bw", "speed", "expected"), RUN_HOURS)
def test_run_hours(w: float, c: float, ref: float, n: int, bw: float | None, speed: float, expected: float) -> None:
    profile = JobProfile(gpu_hours=w, comm_share=c, reference_gbps=ref)
    assert est.run_hours(profile, n, bw, speed) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        (est.spot_hours, (100.0, 0.05, 1.0), 102.5),  # 100 * (1 + 0.05 * 1/2)
        (est.spot_hours, (10.0, 0.2, 4.0), 14.0),  # 10 * (1 + 0.2 * 2)
        (est.compute_cost, (100.0, 64, 1.90), 12_160.0),  # 100 h * 64 GPUs * $1.90
        (est.compute_cost, (100.0, 64, 12.29), 78_656.0),
        (est.energy_kwh, (100.0, 64, 700.0, 1.58), 7_078.4),  # 64 * 700 W * 100 h = 4480 kWh * 1.58
        (est.carbon_kg, (7_078.4, 381.0), 2_696.8704),  # 7078.4 kWh * 381 g / 1000
        (est.transfer_hours, (1_000_000.0, 12.5), 1_000_000 / 12.5 / 3600),  # 80,000 s = 22.2 h
        (est.transfer_cost, (1_000_000.0, 0.09), 90_000.0),  # 1 PB at $0.09/GB
        (est.transfer_cost, (1_000_000.0, 0.0), 0.0),  # a sourced zero (no egress fee) stays zero
    ],
)
def test_cost_energy_transfer(fn: object, args: tuple[float, ...], expected: float) -> None:
    assert callable(fn)
    assert fn(*args) == pytest.approx(expected)


def test_profile_problems_name_the_field() -> None:
    bad = JobProfile(gpu_hours=0, comm_share=1.0, dataset_gb=5.0)
    assert [f for f, _ in bad.problems()] == ["gpuHours", "commShare", "dataSite"]
    assert JobProfile(gpu_hours=1).problems() == []
    # A value above the upper bound says so (it said "must be above 0" for 1e6: a probe's case).
    huge = JobProfile(gpu_hours=1, reference_gbps=1e6, checkpoint_interval_h=1e6).problems()
    assert huge == [
        ("referenceGbps", "must be above 0 and at most 1e5"),
        ("checkpointIntervalHours", "must be above 0 and at most 1e4"),
    ]


NOW = date_to_epoch("2026-01-01")


def _fact(kind: FactKind, value: float, as_of: str = "2025-12-01", **scope: str) -> Fact:
    return Fact(kind=kind, value=value, source="test", as_of=as_of, as_of_s=date_to_epoch(as_of), **scope)


SITE = Site("dc", SiteKind.ON_PREM, capacity_kinds=(CapacityKind.OWNED,))
CLOUD = Site(
    "cloud",
    SiteKind.CLOUD_REGION,
    capacity_kinds=(CapacityKind.ON_DEMAND, CapacityKind.SPOT),
    spot_preemption_per_h=0.05,
)
LINKS = [SiteLink("cloud", "dc", 12.5, 80.0)]
H100 = "NVIDIA H100 80GB HBM3"
VIEW = PlacementView(gpus=64, model=H100, bottleneck_gbps=50.0, hosts=("h1",))
FULL = [
    _fact(FactKind.GPU_HOUR, 1.90, site="dc", model="H100", capacity="owned"),
    _fact(FactKind.GPU_HOUR, 12.29, site="cloud", model="H100", capacity="on-demand"),
    _fact(FactKind.EGRESS, 0.01, site="dc"),
    _fact(FactKind.EGRESS, 0.09, site="cloud"),
    _fact(FactKind.POWER, 700.0, model="H100"),
    _fact(FactKind.PUE, 1.5, site="dc"),
    _fact(FactKind.PUE, 1.2, site="cloud"),
    _fact(FactKind.CARBON, 400.0, site="dc"),
    _fact(FactKind.CARBON, 50.0, site="cloud"),
]
PROFILE = JobProfile(gpu_hours=W, comm_share=0.2, reference_model="H100", dataset_gb=100_000.0, data_site="dc")


def _eval(site: Site, kind: CapacityKind, facts: list[Fact], deadline_h: float | None = None) -> SiteOption:
    return evaluate(site, kind, VIEW, PROFILE, FactBook(facts), LINKS, now=NOW, max_age_days=365, deadline_h=deadline_h)


def test_an_option_with_every_fact() -> None:
    dc = _eval(SITE, CapacityKind.OWNED, FULL)
    assert dc.complete and dc.missing == [] and dc.stale == []
    assert dc.run_hours == pytest.approx(100.0)
    assert dc.total_cost == pytest.approx(12_160.0)  # data already here: no transfer
    assert dc.energy_kwh == pytest.approx(64 * 0.7 * 100 * 1.5)  # 6720 kWh
    assert dc.carbon_kg == pytest.approx(6720 * 0.4)  # 2688 kg
    cloud = _eval(CLOUD, CapacityKind.ON_DEMAND, FULL)
    # 100,000 GB over 12.5 GB/s = 8000 s; paid at the data's site (dc) egress $0.01/GB = $1000.
    assert cloud.transfer_hours == pytest.approx(8000 / 3600)
    assert cloud.transfer_cost == pytest.approx(1000.0)
    assert cloud.total_cost == pytest.approx(78_656.0 + 1000.0)
    assert cloud.total_hours == pytest.approx(100 + 8000 / 3600)


def test_missing_facts_are_named_and_never_zero() -> None:
    spot = _eval(CLOUD, CapacityKind.SPOT, FULL)  # no spot price
    assert spot.compute_cost is None and spot.total_cost is None
    assert spot.missing == [f"GPU-hour price of {H100} (spot) at cloud"]
    assert spot.run_hours == pytest.approx(102.5)  # 100 h * (1 + 0.05 * 1/2): time is still known
    nothing = _eval(SITE, CapacityKind.OWNED, [])
    assert nothing.total_cost is None and nothing.energy_kwh is None and nothing.carbon_kg is None
    assert nothing.missing == [
        f"GPU-hour price of {H100} (owned) at dc",
        f"power per GPU of {H100}",
        "PUE at dc",
        "grid carbon intensity at dc",
    ]
    assert not nothing.complete


def test_stale_facts_are_used_and_named() -> None:
    old = [
        f
        if f.kind is not FactKind.GPU_HOUR
        else _fact(FactKind.GPU_HOUR, 1.90, "2024-01-01", site="dc", model="H100", capacity="owned")
        for f in FULL
    ]
    dc = _eval(SITE, CapacityKind.OWNED, old)
    assert dc.total_cost == pytest.approx(12_160.0)
    assert dc.stale == ["GPU-hour price of H100 (owned) at dc as of 2024-01-01 (731 days old, older than 365)"]


def test_a_definition_never_goes_stale() -> None:
    look = Lookup(NOW, 365)
    base = Fact(
        FactKind.SPEED, 1.0, "definition: the baseline", "2020-01-01", date_to_epoch("2020-01-01"), model="H100"
    )
    assert look.note(FactKind.SPEED, base, model="H100") == 1.0 and look.stale == []


def test_a_model_needs_its_speed_against_the_reference() -> None:
    view = PlacementView(gpus=64, model="NVIDIA GB200", bottleneck_gbps=900.0, hosts=("t1",))
    site = Site("neo", SiteKind.CLOUD_REGION, capacity_kinds=(CapacityKind.ON_DEMAND,))
    opt = evaluate(
        site, CapacityKind.ON_DEMAND, view, PROFILE, FactBook(FULL), LINKS, now=NOW, max_age_days=365, deadline_h=None
    )
    assert opt.run_hours is None and "relative speed of NVIDIA GB200" in opt.missing
    speeds = [*FULL, _fact(FactKind.SPEED, 1.0, model="H100"), _fact(FactKind.SPEED, 2.5, model="GB200")]
    opt = evaluate(
        site, CapacityKind.ON_DEMAND, view, PROFILE, FactBook(speeds), LINKS, now=NOW, max_age_days=365, deadline_h=None
    )
    assert opt.speed == pytest.approx(2.5)
    assert opt.run_hours == pytest.approx(100 * (0.32 + 0.2 / 18))
    assert "link between sites dc and neo" in opt.missing  # no link to where the data is


def test_ranking_by_objective_and_deadline() -> None:
    dc = _eval(SITE, CapacityKind.OWNED, FULL, deadline_h=50.0)
    cloud = _eval(CLOUD, CapacityKind.ON_DEMAND, FULL, deadline_h=50.0)
    unknown = SiteOption(site="zzz", capacity=None, fits=False, reason="no placement")
    assert [o.site for o in rank([cloud, unknown, dc], Objective.CHEAPEST, None)] == ["dc", "cloud", "zzz"]
    assert [o.site for o in rank([cloud, dc], Objective.LOWEST_CARBON, None)] == ["cloud", "dc"]
    late = rank([_eval(SITE, CapacityKind.OWNED, FULL, deadline_h=50.0)], Objective.CHEAPEST_UNDER_DEADLINE, 50.0)
    assert late[0].meets_deadline is False and late[0].reason.startswith("misses the deadline")


def test_fact_book_prefers_the_exact_model_name() -> None:
    book = FactBook(
        [_fact(FactKind.POWER, 700.0, model="H100"), _fact(FactKind.POWER, 350.0, model="NVIDIA H100 PCIe")]
    )
    assert book.find(FactKind.POWER, model="NVIDIA H100 PCIe").value == 350.0  # type: ignore[union-attr]
    assert book.find(FactKind.POWER, model=H100).value == 700.0  # type: ignore[union-attr]
    assert book.find(FactKind.POWER, model="NVIDIA A100-SXM4-40GB") is None
    look = Lookup(NOW, 365)
    assert look.note(FactKind.POWER, None, model="X") is None and look.missing == ["power per GPU of X"]


def test_the_example_price_file_is_valid_and_cites_every_fact() -> None:
    catalog = load_price_file(EXAMPLE_PRICES)
    assert catalog.catalog.startswith("example-")
    for f in catalog.facts:
        assert f.source.startswith(("https://", "operator:", "definition:")), f
        date_to_epoch(f.as_of)
        if f.source.startswith("https://") and f.kind in (FactKind.GPU_HOUR, FactKind.EGRESS):
            assert f.note and "as listed on" in f.note, f


@pytest.mark.parametrize(
    ("fact", "message"),
    [
        ({"kind": "gpu-hour", "value": 1, "source": "x", "as_of": "2025-01-01", "site": "a"}, "needs model"),
        (
            {"kind": "egress", "value": 1, "source": "x", "as_of": "2025-01-01", "site": "a", "model": "H100"},
            "takes no model",
        ),
        ({"kind": "egress", "value": 1, "source": "x", "as_of": "yesterday", "site": "a"}, "not a date"),
        ({"kind": "power", "value": 1, "unit": "kW", "source": "x", "as_of": "2025-01-01", "model": "H100"}, "in W"),
        ({"kind": "pue", "value": 0, "source": "x", "as_of": "2025-01-01", "site": "a"}, "must be positive"),
    ],
)
def test_bad_facts_are_refused_naming_the_field(fact: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FactIn.model_validate(fact)


def test_a_price_file_lists_each_fact_once() -> None:
    one = {"kind": "egress", "value": 1, "source": "x", "as_of": "2025-01-01", "site": "a"}
    with pytest.raises(ValueError, match="listed twice"):
        PriceCatalog.model_validate({"catalog": "v1", "fact": [one, one]})


@pytest.mark.parametrize(
    ("catalog", "message"),
    [
        ({"sites": [{"name": "a", "kind": "on-prem"}, {"name": "a", "kind": "on-prem"}]}, "listed twice"),
        (
            {
                "sites": [{"name": "a", "kind": "on-prem"}],
                "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1, "latency_ms": 1}],
            },
            "not a listed site",
        ),
        ({"sites": [{"name": "a", "kind": "cloud-region", "capacity_kinds": ["spot"]}]}, "preempted"),
        ({"sites": [{"name": "z", "kind": "availability-zone", "parent": "r"}]}, "unknown parent"),
        # A probe's cases, all stored before: a zone its own parent, two zones each other's, a zone
        # of no region, an on-prem site with a parent, a capacity kind listed three times.
        ({"sites": [{"name": "z", "kind": "availability-zone", "parent": "z"}]}, "not a cloud region"),
        (
            {
                "sites": [
                    {"name": "z1", "kind": "availability-zone", "parent": "z2"},
                    {"name": "z2", "kind": "availability-zone", "parent": "z1"},
                ]
            },
            "not a cloud region",
        ),
        ({"sites": [{"name": "z", "kind": "availability-zone"}]}, "names no region"),
        (
            {"sites": [{"name": "r", "kind": "cloud-region"}, {"name": "dc", "kind": "on-prem", "parent": "r"}]},
            "only an availability zone",
        ),
        ({"sites": [{"name": "dc", "kind": "on-prem", "capacity_kinds": ["owned"] * 3}]}, "a kind twice"),
    ],
)
def test_bad_site_catalogues_are_refused(catalog: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SiteCatalog.model_validate(catalog)
