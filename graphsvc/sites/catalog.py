"""The site catalogue and the price file: validated input, turned into query parameters.

Both come from operators (a versioned file in the repository, `PUT /v1/sites`, `PUT /v1/prices`,
GraphQL `setCostFact`); every mistake is refused whole, naming the field, before anything
is written.
"""

from __future__ import annotations

import math
import time
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from topo_facts.models import HostName

from graphsvc.sites.book import date_to_epoch
from graphsvc.sites.model import SCOPES, UNITS, CapacityKind, Fact, FactKind, SiteKind, fact_key

Name = str
EXAMPLE_PRICES = Path(__file__).with_name("data") / "example-prices.toml"
# A fact may be dated up to a day ahead of this clock: the sender's day may have begun first.
FUTURE_SLACK_S = 86_400.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SiteIn(_Strict):
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    kind: SiteKind
    provider: str | None = Field(default=None, max_length=128)
    region: str | None = Field(default=None, max_length=128)
    location: str | None = Field(default=None, max_length=256)
    parent: str | None = Field(default=None, max_length=128, description="A zone's region")
    capacity_kinds: list[CapacityKind] = Field(default_factory=list, max_length=4)
    spot_preemption_per_h: float | None = Field(default=None, ge=0, le=10)
    # Named as hosts name their cluster (topo_facts HostName): never empty, which also keeps an
    # empty name out of `MERGE (:Cluster {name: ''})`, which kills FalkorDB 4.16 (found by the REST fuzz test).
    clusters: list[HostName] = Field(default_factory=list, max_length=1000)


class SiteLinkIn(_Strict):
    a: str
    b: str
    bandwidth_gbps: float = Field(gt=0, le=1e6, description="GB/s, one direction")
    latency_ms: float = Field(ge=0, le=10_000)


class SiteCatalog(_Strict):
    """Every site with its clusters and capacity kinds, and the links between them."""

    sites: list[SiteIn] = Field(max_length=1000)
    links: list[SiteLinkIn] = Field(default_factory=list, max_length=10_000)

    @model_validator(mode="after")
    def _consistent(self) -> SiteCatalog:
        names = [s.name for s in self.sites]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"sites: {sorted(dup)[0]!r} is listed twice")
        owner: dict[str, str] = {}
        kinds = {s.name: s.kind for s in self.sites}
        for s in self.sites:
            for c in s.clusters:
                if c in owner:
                    raise ValueError(f"clusters: {c!r} belongs to both {owner[c]!r} and {s.name!r}")
                owner[c] = s.name
            if s.parent is not None and s.parent not in names:
                raise ValueError(f"parent: site {s.name!r} names unknown parent {s.parent!r}")
            # A zone names its region (docs/sites.md); nothing else has a parent. A zone its own
            # parent, two zones each other's, a zone of no region: all were stored (a probe's case).
            zone = s.kind is SiteKind.AVAILABILITY_ZONE
            if zone and s.parent is None:
                raise ValueError(f"parent: zone {s.name!r} names no region (a zone names its region in parent)")
            if not zone and s.parent is not None:
                raise ValueError(f"parent: only an availability zone has a parent; {s.name!r} is {s.kind.value}")
            if zone and kinds.get(str(s.parent)) is not SiteKind.CLOUD_REGION:
                raise ValueError(f"parent: zone {s.name!r} names {s.parent!r}, which is not a cloud region")
            if len(set(s.capacity_kinds)) != len(s.capacity_kinds):
                raise ValueError(f"capacity_kinds: site {s.name!r} lists a kind twice")
            if CapacityKind.SPOT in s.capacity_kinds and s.spot_preemption_per_h is None:
                raise ValueError(
                    f"spot_preemption_per_h: site {s.name!r} offers spot capacity; say how often it is preempted"
                )
        pairs: set[frozenset[str]] = set()
        for link in self.links:
            for end in (link.a, link.b):
                if end not in names:
                    raise ValueError(f"links: {end!r} is not a listed site")
            pair = frozenset((link.a, link.b))
            if len(pair) < 2:
                raise ValueError(f"links: a link from {link.a!r} to itself")
            if pair in pairs:
                raise ValueError(f"links: {link.a!r}-{link.b!r} is listed twice")
            pairs.add(pair)
        return self

    def params(self, now: float) -> dict[str, Any]:
        return {
            "now": now,
            "sites": [
                {
                    "name": s.name,
                    "kind": s.kind.value,
                    "provider": s.provider,
                    "region": s.region,
                    "location": s.location,
                    "parent": s.parent,
                    "capacity_kinds": [k.value for k in s.capacity_kinds],
                    "spot_preemption_per_h": s.spot_preemption_per_h,
                }
                for s in self.sites
            ],
            "clusters": [{"site": s.name, "cluster": c} for s in self.sites for c in s.clusters],
            "links": [
                {"a": min(x.a, x.b), "b": max(x.a, x.b), "bandwidth_gbps": x.bandwidth_gbps, "latency_ms": x.latency_ms}
                for x in self.links
            ],
        }


class FactIn(_Strict):
    kind: FactKind
    value: float = Field(ge=0, le=1e9)
    unit: str | None = Field(default=None, description="Checked against the kind's unit when given")
    source: str = Field(min_length=1, max_length=1000, description="A URL, or who set it (operator:finance)")
    as_of: str = Field(description="The date the value was true, YYYY-MM-DD")
    site: str | None = Field(default=None, max_length=128)
    model: str | None = Field(default=None, max_length=128)
    capacity: CapacityKind | None = None
    note: str | None = Field(default=None, max_length=1000)

    @field_validator("as_of")
    @classmethod
    def _date(cls, v: str) -> str:
        try:
            at = date_to_epoch(v)
        except ValueError:
            raise ValueError(f"{v!r} is not a date (YYYY-MM-DD)") from None
        if at > time.time() + FUTURE_SLACK_S:
            # The newest fact wins (keptNewer): one dated ahead could never be corrected (a probe's case).
            raise ValueError(f"{v!r} is in the future: a fact is what is known as of a day that has come")
        return v

    @model_validator(mode="after")
    def _scoped(self) -> FactIn:
        if not math.isfinite(self.value):
            raise ValueError("value must be a finite number")
        if self.unit is not None and self.unit != UNITS[self.kind]:
            raise ValueError(f"unit: a {self.kind.value} fact is in {UNITS[self.kind]}, not {self.unit}")
        scope = SCOPES[self.kind]
        for name in ("site", "model", "capacity"):
            given = getattr(self, name) is not None
            if given != (name in scope):
                need = "needs" if name in scope else "takes no"
                raise ValueError(f"{name}: a {self.kind.value} fact {need} {name}")
        if self.kind in (FactKind.PUE, FactKind.SPEED) and self.value <= 0:
            raise ValueError(f"value: a {self.kind.value} must be positive")
        return self

    def fact(self, catalog: str | None) -> Fact:
        return Fact(
            kind=self.kind,
            value=self.value,
            source=self.source,
            as_of=self.as_of,
            as_of_s=date_to_epoch(self.as_of),
            site=self.site,
            model=self.model,
            capacity=self.capacity.value if self.capacity else None,
            catalog=catalog,
            note=self.note,
        )


class PriceCatalog(_Strict):
    """A versioned file of facts (`catalog` names its version); later dates win per fact."""

    catalog: str = Field(min_length=1, max_length=128)
    note: str | None = None
    facts: list[FactIn] = Field(max_length=10_000, alias="fact")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _unique(self) -> PriceCatalog:
        seen: set[str] = set()
        for f in self.facts:
            key = fact_key(f.kind, f.site, f.model, f.capacity.value if f.capacity else None)
            if key in seen:
                raise ValueError(f"facts: {key!r} is listed twice")
            seen.add(key)
        return self

    def all_facts(self) -> list[Fact]:
        return [f.fact(self.catalog) for f in self.facts]


def load_price_file(path: Path) -> PriceCatalog:
    """Read a TOML price file (`catalog = "..."` and `[[fact]]` tables)."""
    with path.open("rb") as fh:
        return PriceCatalog.model_validate(tomllib.load(fh))


def fact_params(facts: list[Fact], now: float) -> dict[str, Any]:
    return {
        "now": now,
        "facts": [
            {
                "key": f.key,
                "kind": f.kind.value,
                "site": f.site,
                "model": f.model,
                "capacity": f.capacity,
                "value": f.value,
                "unit": f.unit,
                "source": f.source,
                "as_of": f.as_of,
                "as_of_s": f.as_of_s,
                "catalog": f.catalog,
                "note": f.note,
            }
            for f in facts
        ],
    }


def fact_from_row(row: dict[str, Any]) -> Fact:
    return Fact(
        kind=FactKind(row["kind"]),
        value=float(row["value"]),
        source=str(row["source"]),
        as_of=str(row["as_of"]),
        as_of_s=float(row["as_of_s"]),
        site=row.get("site"),
        model=row.get("model"),
        capacity=row.get("capacity"),
        catalog=row.get("catalog"),
        note=row.get("note"),
    )
