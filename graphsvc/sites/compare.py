"""compareSites, the pure part: for each site's best placement, every capacity kind it offers is
estimated; the best kind for the objective stands for the site; sites are ranked.

A number that needs a missing fact is None and the fact is named in `missing`; a stale
fact is used and named in `stale`. Sites that do not fit, or lack the objective's number,
rank after those that have it, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from topo_facts.gpu_models import model_match

from graphsvc.sites import estimate as est
from graphsvc.sites.book import FactBook, Lookup
from graphsvc.sites.estimate import JobProfile
from graphsvc.sites.model import CapacityKind, Fact, FactKind, Site, SiteLink


class Objective(StrEnum):
    CHEAPEST = "cheapest"
    FASTEST = "fastest"
    CHEAPEST_UNDER_DEADLINE = "cheapest-under-deadline"
    LOWEST_CARBON = "lowest-carbon"


@dataclass(frozen=True)
class PlacementView:
    """What the comparison needs of a site's best placement."""

    gpus: int
    model: str
    bottleneck_gbps: float | None
    hosts: tuple[str, ...]
    measured_power_w: float | None = None  # mean of busy GPUs of this model, from collectors
    measured_gpus: int = 0
    wait_hours: float = 0.0
    # The full wait search's answer is at least this (== wait_hours unless the wait is coarse:
    # fewer searches than the bisection needs, graphsvc.sites.wait).
    wait_from_hours: float = 0.0


@dataclass
class SiteOption:
    site: str
    capacity: str | None
    fits: bool
    placement: PlacementView | None = None
    speed: float | None = None
    run_hours: float | None = None
    transfer_hours: float | None = None
    total_hours: float | None = None
    compute_cost: float | None = None
    transfer_cost: float | None = None
    total_cost: float | None = None
    power_w: float | None = None
    power_source: str | None = None
    energy_kwh: float | None = None
    carbon_kg: float | None = None
    meets_deadline: bool | None = None
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    reason: str = ""
    # The predicted wait was searched with fewer searches than the bisection needs (the query's
    # cost limit paid for no more): wait_reason says how many and the range the full answer is in.
    wait_coarse: bool = False
    wait_reason: str | None = None

    @property
    def complete(self) -> bool:
        return self.total_cost is not None and self.total_hours is not None and self.carbon_kg is not None


def _link(links: list[SiteLink], a: str, b: str) -> SiteLink | None:
    return next((x for x in links if x.joins(a, b)), None)


def _speed(profile: JobProfile, model: str, book: FactBook, look: Lookup) -> float | None:
    ref = profile.reference_model
    if ref is None:
        return 1.0
    try:
        if model_match(ref).matches(model) or ref.strip().lower() == model.strip().lower():
            return 1.0
    except ValueError:
        pass
    mine = look.note(FactKind.SPEED, book.find(FactKind.SPEED, model=model), model=model)
    theirs = look.note(FactKind.SPEED, book.find(FactKind.SPEED, model=ref), model=ref)
    return mine / theirs if mine is not None and theirs is not None else None


def evaluate(
    site: Site,
    capacity: CapacityKind,
    placement: PlacementView,
    profile: JobProfile,
    book: FactBook,
    links: list[SiteLink],
    *,
    now: float,
    max_age_days: float,
    deadline_h: float | None,
) -> SiteOption:
    """One site, one capacity kind: every estimate that its facts allow."""
    look = Lookup(now, max_age_days)
    opt = SiteOption(site=site.name, capacity=capacity.value, fits=True, placement=placement)
    n, model = placement.gpus, placement.model
    opt.speed = _speed(profile, model, book, look)
    if opt.speed is not None:
        hours = est.run_hours(profile, n, placement.bottleneck_gbps, opt.speed)
        if capacity is CapacityKind.SPOT:
            rate = site.spot_preemption_per_h
            hours = est.spot_hours(hours, rate or 0.0, profile.checkpoint_interval_h) if rate is not None else hours
        opt.run_hours = hours
    price = look.note(
        FactKind.GPU_HOUR,
        book.find(FactKind.GPU_HOUR, site=site.name, model=model, capacity=capacity.value),
        site=site.name,
        model=model,
        capacity=capacity.value,
    )
    if price is not None and opt.run_hours is not None:
        opt.compute_cost = est.compute_cost(opt.run_hours, n, price)
    # Data: moved from where it lives over the link between the sites, paid at its site's egress price.
    if profile.dataset_gb <= 0 or profile.data_site == site.name:
        opt.transfer_hours, opt.transfer_cost = 0.0, 0.0
    else:
        src = profile.data_site or ""
        link = _link(links, src, site.name)
        if link is None:
            look.missing.append(f"link between sites {src} and {site.name}")
        else:
            opt.transfer_hours = est.transfer_hours(profile.dataset_gb, link.bandwidth_gbps)
        egress = look.note(FactKind.EGRESS, book.find(FactKind.EGRESS, site=src), site=src)
        if egress is not None:
            opt.transfer_cost = est.transfer_cost(profile.dataset_gb, egress)
    if opt.run_hours is not None and opt.transfer_hours is not None:
        opt.total_hours = placement.wait_hours + opt.transfer_hours + opt.run_hours
    if opt.compute_cost is not None and opt.transfer_cost is not None:
        opt.total_cost = opt.compute_cost + opt.transfer_cost
    # Energy: measured power under load where collectors report it, the model's TDP otherwise.
    if placement.measured_power_w is not None:
        opt.power_w = placement.measured_power_w
        opt.power_source = f"measured (mean of {placement.measured_gpus} busy GPUs)"
    else:
        opt.power_w = look.note(FactKind.POWER, book.find(FactKind.POWER, model=model), model=model)
        opt.power_source = "TDP" if opt.power_w is not None else None
    pue = look.note(FactKind.PUE, book.find(FactKind.PUE, site=site.name), site=site.name)
    grid = look.note(FactKind.CARBON, book.find(FactKind.CARBON, site=site.name), site=site.name)
    if opt.power_w is not None and pue is not None and opt.run_hours is not None:
        opt.energy_kwh = est.energy_kwh(opt.run_hours, n, opt.power_w, pue)
        if grid is not None:
            opt.carbon_kg = est.carbon_kg(opt.energy_kwh, grid)
    if deadline_h is not None and opt.total_hours is not None:
        opt.meets_deadline = opt.total_hours <= deadline_h
    opt.missing, opt.stale, opt.facts = look.missing, look.stale, look.used
    return opt


def _value(opt: SiteOption, objective: Objective) -> float | None:
    if objective is Objective.FASTEST:
        return opt.total_hours
    if objective is Objective.LOWEST_CARBON:
        return opt.carbon_kg
    return opt.total_cost


def sort_key(opt: SiteOption, objective: Objective) -> tuple[int, float, float, str]:
    """Fitting options with the objective's number first (under the deadline first, if one is set)."""
    value = _value(opt, objective)
    if not opt.fits or value is None:
        return (3, 0.0, 0.0, opt.site)
    late = objective is Objective.CHEAPEST_UNDER_DEADLINE and opt.meets_deadline is not True
    if late:
        return (2, opt.total_hours if opt.total_hours is not None else float("inf"), 0.0, opt.site)
    tie = opt.total_hours if objective is not Objective.FASTEST else (opt.total_cost or 0.0)
    return (1, value, tie if tie is not None else 0.0, opt.site)


def best_for_site(options: list[SiteOption], objective: Objective) -> SiteOption:
    """The site's best capacity kind; what the other kinds lacked is named on it too."""
    best = min(options, key=lambda o: sort_key(o, objective))
    for other in options:
        if other is not best:
            best.missing += [m for m in other.missing if m not in best.missing]
            best.stale += [s for s in other.stale if s not in best.stale]
    return best


def rank(options: list[SiteOption], objective: Objective, deadline_h: float | None) -> list[SiteOption]:
    ranked = sorted(options, key=lambda o: sort_key(o, objective))
    for opt in ranked:
        if opt.reason:
            continue
        value = _value(opt, objective)
        if value is None:
            what = {Objective.FASTEST: "time", Objective.LOWEST_CARBON: "carbon"}.get(objective, "cost")
            opt.reason = f"{what} unknown: missing {'; '.join(opt.missing) or 'facts'}"
        elif objective is Objective.CHEAPEST_UNDER_DEADLINE and opt.meets_deadline is not True:
            opt.reason = f"misses the deadline: {opt.total_hours:.1f} h > {deadline_h:g} h"
        else:
            opt.reason = _summary(opt)
    return ranked


def _summary(opt: SiteOption) -> str:
    parts = [f"{opt.capacity}: {opt.total_hours:.1f} h" if opt.total_hours is not None else f"{opt.capacity}"]
    if opt.total_cost is not None:
        parts.append(f"${opt.total_cost:,.0f}")
    if opt.carbon_kg is not None:
        parts.append(f"{opt.carbon_kg:,.0f} kg CO2e")
    if opt.transfer_hours:
        parts.append(f"incl. {opt.transfer_hours:.1f} h moving the data")
    return ", ".join(parts)
