"""Sites, links and cost facts as plain data: what the estimates and the comparison read."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SiteKind(StrEnum):
    ON_PREM = "on-prem"
    CLOUD_REGION = "cloud-region"
    AVAILABILITY_ZONE = "availability-zone"


class CapacityKind(StrEnum):
    """How a site's GPUs are paid for: bought, reserved for a term, by the hour, or preemptible."""

    OWNED = "owned"
    RESERVED = "reserved"
    ON_DEMAND = "on-demand"
    SPOT = "spot"


class FactKind(StrEnum):
    """The cost and energy facts an estimate needs; each has one unit."""

    GPU_HOUR = "gpu-hour"  # price of one GPU for one hour, by site, model and capacity kind
    EGRESS = "egress"  # price of one GB leaving a site
    POWER = "power"  # a GPU model's board power (TDP) under load, watts
    CARBON = "carbon"  # a site's grid carbon intensity
    PUE = "pue"  # a site's power usage effectiveness (facility / IT energy)
    SPEED = "speed"  # a GPU model's training throughput relative to one common baseline (H100 SXM = 1)


UNITS: dict[FactKind, str] = {
    FactKind.GPU_HOUR: "USD/GPU-hour",
    FactKind.EGRESS: "USD/GB",
    FactKind.POWER: "W",
    FactKind.CARBON: "gCO2e/kWh",
    FactKind.PUE: "ratio",
    FactKind.SPEED: "ratio",
}

# Which fields identify a fact of each kind (the others must be empty).
SCOPES: dict[FactKind, tuple[str, ...]] = {
    FactKind.GPU_HOUR: ("site", "model", "capacity"),
    FactKind.EGRESS: ("site",),
    FactKind.POWER: ("model",),
    FactKind.CARBON: ("site",),
    FactKind.PUE: ("site",),
    FactKind.SPEED: ("model",),
}


@dataclass(frozen=True)
class Site:
    name: str
    kind: SiteKind
    provider: str | None = None
    region: str | None = None
    location: str | None = None
    parent: str | None = None
    capacity_kinds: tuple[CapacityKind, ...] = ()
    spot_preemption_per_h: float | None = None
    clusters: tuple[str, ...] = ()


@dataclass(frozen=True)
class SiteLink:
    a: str
    b: str
    bandwidth_gbps: float  # GB/s, one direction
    latency_ms: float

    def joins(self, x: str, y: str) -> bool:
        return {self.a, self.b} == {x, y}


@dataclass(frozen=True)
class Fact:
    """One cost or energy fact with where it comes from and when it was true."""

    kind: FactKind
    value: float
    source: str
    as_of: str  # ISO date, e.g. 2025-01-15
    as_of_s: float  # the same date as epoch seconds (UTC midnight)
    site: str | None = None
    model: str | None = None
    capacity: str | None = None
    catalog: str | None = None
    note: str | None = None

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def key(self) -> str:
        return fact_key(self.kind, self.site, self.model, self.capacity)

    def describe(self) -> str:
        return describe_fact(self.kind, self.site, self.model, self.capacity)


def fact_key(kind: FactKind, site: str | None, model: str | None, capacity: str | None) -> str:
    return "|".join([kind.value, site or "", model or "", capacity or ""])


def describe_fact(
    kind: FactKind, site: str | None = None, model: str | None = None, capacity: str | None = None
) -> str:
    """A fact's name as an answer says it is missing or stale: 'gpu-hour price of H100 (spot) at aws-1'."""
    what = {
        FactKind.GPU_HOUR: "GPU-hour price",
        FactKind.EGRESS: "egress price per GB",
        FactKind.POWER: "power per GPU",
        FactKind.CARBON: "grid carbon intensity",
        FactKind.PUE: "PUE",
        FactKind.SPEED: "relative speed",
    }[kind]
    parts = [what]
    if model:
        parts.append(f"of {model}")
    if capacity:
        parts.append(f"({capacity})")
    if site:
        parts.append(f"at {site}")
    return " ".join(parts)
