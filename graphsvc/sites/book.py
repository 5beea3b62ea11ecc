"""Looking facts up: the most specific fact for a site, model and capacity kind, and whether it is stale.

Pure functions over plain data. A fact that is not there is answered as missing, by name;
an old one is used and named stale. Nothing is ever read as zero for want of a fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from topo_facts.gpu_models import model_match

from graphsvc.sites.model import Fact, FactKind, describe_fact

DAY_S = 86400.0
TIMELESS = "definition:"  # a fact true by definition (the speed baseline) never goes stale


def date_to_epoch(text: str) -> float:
    """An ISO date (YYYY-MM-DD) as epoch seconds at UTC midnight; ValueError if it is not one."""
    day = date.fromisoformat(text)
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _model_fits(fact_model: str | None, gpu_model: str | None) -> int:
    """0: no match; 2: the same name; 1: the fact names the model's family or an alias."""
    if fact_model is None or gpu_model is None:
        return 2 if fact_model == gpu_model else 0
    if fact_model.strip().lower() == gpu_model.strip().lower():
        return 2
    try:
        return 1 if model_match(fact_model).matches(gpu_model) else 0
    except ValueError:
        return 0


@dataclass
class Lookup:
    """What one estimate looked up: the facts found, and those missing or stale, by name."""

    now: float
    max_age_days: float
    used: list[Fact] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def note(
        self,
        kind: FactKind,
        fact: Fact | None,
        *,
        site: str | None = None,
        model: str | None = None,
        capacity: str | None = None,
    ) -> float | None:
        """The fact's value, recording it as used (and stale if old); None, recorded as missing, if absent."""
        if fact is None:
            name = describe_fact(kind, site, model, capacity)
            if name not in self.missing:
                self.missing.append(name)
            return None
        if fact not in self.used:
            self.used.append(fact)
        age_days = (self.now - fact.as_of_s) / DAY_S
        if age_days > self.max_age_days and not fact.source.startswith(TIMELESS):
            name = f"{fact.describe()} as of {fact.as_of} ({age_days:.0f} days old, older than {self.max_age_days:g})"
            if name not in self.stale:
                self.stale.append(name)
        return fact.value


class FactBook:
    """The loaded facts, searchable by kind, site, model and capacity kind."""

    def __init__(self, facts: list[Fact]) -> None:
        self.facts = facts

    def find(
        self, kind: FactKind, *, site: str | None = None, model: str | None = None, capacity: str | None = None
    ) -> Fact | None:
        """The matching fact; for a model, an exact name beats a family name (H100 SXM over H100)."""
        best: tuple[int, Fact] | None = None
        for f in self.facts:
            if f.kind is not kind or (f.site or None) != site or (f.capacity or None) != capacity:
                continue
            fit = _model_fits(f.model, model) if (f.model or model) else 2
            if fit and (best is None or fit > best[0]):
                best = (fit, f)
        return best[1] if best else None
