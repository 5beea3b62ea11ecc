"""Shaped jobs: tensor-, pipeline- and data-parallel groups, and the levels they must sit in.

A large training job is not "n GPUs": it is ``tp x pp x dp`` ranks in ``pp x dp`` tensor-parallel
groups. A TP group all-reduces every layer, so it must sit inside one NVLink domain; the
whole job should sit inside one leaf (or scalable unit) so that pipeline neighbours and the
data-parallel rings cross as few switches as possible. Each level is *required* (never
escalated) or *preferred* (escalated to the next tier only when the preferred one cannot
hold it), and the answer says which tier each group and the job actually got.

Text form (parsed here for the CLI and GraphQL)::

    tp=8 pp=4 dp=8 model=H100
    tp=4 dp=16 model=H100 job-in=leaf:required
    groups=8 group-size=8 group-in=nvlink-domain job-in=scalable-unit spread=leaves
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from graphsvc.placement.request import PlacementRequest, RequestError, parse_number

MAX_RANKS = 4096


class Tier(StrEnum):
    """Topology tiers from tightest to widest; a level names one of them."""

    NVLINK_DOMAIN = "nvlink-domain"
    HOST = "host"
    LEAF = "leaf"
    SCALABLE_UNIT = "scalable-unit"
    POD = "pod"
    CLUSTER = "cluster"


TIERS: tuple[Tier, ...] = tuple(Tier)


@dataclass(frozen=True)
class Level:
    """Where a set of GPUs must (required) or should (preferred) sit."""

    tier: Tier
    required: bool

    def tiers(self) -> tuple[Tier, ...]:
        """The tiers to try, tightest first: tighter is never worse for communication, so every
        tier up to its own when required, and every tier when preferred (wider only if needed)."""
        return TIERS[: TIERS.index(self.tier) + 1] if self.required else TIERS

    def widened(self, tier: Tier) -> bool:
        """Did a placement at `tier` have to go wider than this level asks?"""
        return TIERS.index(tier) > TIERS.index(self.tier)

    def text(self) -> str:
        return f"{self.tier.value}:{'required' if self.required else 'preferred'}"


@dataclass(frozen=True)
class JobShape:
    """A job as TP groups: ``tp`` GPUs per group, ``pp * dp`` groups, ranks = tp * pp * dp."""

    tp: int
    pp: int = 1
    dp: int = 1
    model: str | None = None
    min_memory_gib: float | None = None
    group_level: Level = Level(Tier.NVLINK_DOMAIN, True)
    job_level: Level = Level(Tier.LEAF, False)
    spread_leaves: bool = False
    exclude_hosts: tuple[str, ...] = ()
    exclude_unhealthy: bool = True

    @property
    def groups(self) -> int:
        return self.pp * self.dp

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp

    def gpu_request(self) -> PlacementRequest:
        """The per-GPU constraints (model, memory, health, exclusions) as a plain request."""
        return PlacementRequest(
            gpus=1,
            model=self.model,
            min_memory_gib=self.min_memory_gib,
            exclude_hosts=self.exclude_hosts,
            exclude_unhealthy=self.exclude_unhealthy,
        )

    def validated(self) -> JobShape:
        for name, value in (("tp", self.tp), ("pp", self.pp), ("dp", self.dp)):
            if value < 1:
                raise RequestError(name, "must be at least 1")
        if self.ranks > MAX_RANKS:
            raise RequestError("ranks", f"tp*pp*dp = {self.ranks} is more than {MAX_RANKS} GPUs")
        if TIERS.index(self.group_level.tier) > TIERS.index(self.job_level.tier):
            raise RequestError(
                "groupIn", f"a group cannot be wider ({self.group_level.tier}) than the job ({self.job_level.tier})"
            )
        narrow = TIERS.index(self.job_level.tier) <= TIERS.index(Tier.LEAF)
        if self.spread_leaves and narrow and self.job_level.required:
            raise RequestError("spread", "spreading across leaves needs a job level wider than one leaf")
        self.gpu_request().validated()
        return self

    def text(self) -> str:
        """The canonical text form; parse_shape(s.text()) == s."""
        parts = [f"tp={self.tp}", f"pp={self.pp}", f"dp={self.dp}"]
        if self.model:
            parts.append(f"model={self.model}")
        if self.min_memory_gib is not None:
            parts.append(f"mem>={self.min_memory_gib:g}")
        parts.append(f"group-in={self.group_level.text()}")
        parts.append(f"job-in={self.job_level.text()}")
        if self.spread_leaves:
            parts.append("spread=leaves")
        if self.exclude_hosts:
            parts.append("exclude=" + ",".join(self.exclude_hosts))
        if not self.exclude_unhealthy:
            parts.append("allow-unhealthy")
        return " ".join(parts)


_TOKEN = re.compile(r"^([a-z][a-z-]*)\s*(>=|=)\s*(.+)$", re.IGNORECASE)


def _level(token: str, raw: str, default_required: bool) -> Level:
    tier_text, _, kind = raw.lower().partition(":")
    aliases = {"domain": "nvlink-domain", "nvl": "nvlink-domain", "su": "scalable-unit", "rack": "nvlink-domain"}
    try:
        tier = Tier(aliases.get(tier_text, tier_text))
    except ValueError:
        raise RequestError("text", f"{token!r}: tiers are {', '.join(t.value for t in Tier)}") from None
    if kind not in ("", "required", "preferred"):
        raise RequestError("text", f"{token!r}: a level is required or preferred")
    return Level(tier, default_required if not kind else kind == "required")


def _int(token: str, raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:  # isdigit alone takes '٨' and '²'
        raise RequestError("text", f"{token!r}: {raw!r} is not a count (digits 0-9, at most 6)")
    return int(raw)


def parse_shape(text: str) -> JobShape:
    """Parse the shaped text form; errors name the token at fault."""
    if len(text) > 4096:
        raise RequestError("text", "longer than 4096 characters")
    values: dict[str, object] = {}
    tp: int | None = None
    pp = dp = 1
    groups: int | None = None
    seen: dict[str, str] = {}
    for token in text.split():
        low = token.lower()
        if low == "allow-unhealthy":
            values["exclude_unhealthy"] = False
            continue
        m = _TOKEN.match(token)
        if not m:
            raise RequestError("text", f"{token!r}: expected key=value (keys: {', '.join(_SHAPE_OPTIONS)})")
        key, op, raw = m.group(1).lower(), m.group(2), m.group(3)
        # Each option once, as the request form says: `tp=8 tp=4` was placed as tp=4, and
        # `tp=8 group-size=4` as the last one (a probe's case). Aliases count as their option.
        option = _ALIASES.get(key, key)
        if option in seen:
            raise RequestError("text", f"{token!r}: give each option once ({seen[option]!r} gave it already)")
        seen[option] = token
        if op == ">=" and key not in ("mem", "memory", "min-mem"):
            raise RequestError("text", f"{token!r}: use = with {key}")
        if key in ("tp", "group-size"):
            tp = _int(token, raw)
        elif key == "pp":
            pp = _int(token, raw)
        elif key == "dp":
            dp = _int(token, raw)
        elif key == "groups":
            groups = _int(token, raw)
        elif key == "model":
            values["model"] = raw
        elif key in ("mem", "memory", "min-mem"):
            values["min_memory_gib"] = parse_number(token, raw, "gib")  # as the request form reads it
        elif key == "group-in":
            values["group_level"] = _level(token, raw, True)
        elif key == "job-in":
            values["job_level"] = _level(token, raw, False)
        elif key == "spread":
            if raw.lower() != "leaves":
                raise RequestError("text", f"{token!r}: spread=leaves is the only spread")
            values["spread_leaves"] = True
        elif key in ("exclude", "exclude-hosts"):
            values["exclude_hosts"] = tuple(h for h in raw.split(",") if h)
        else:
            raise RequestError("text", f"{token!r}: unknown key {key!r} (keys: {', '.join(_SHAPE_OPTIONS)})")
    if tp is None:
        raise RequestError("text", "a shaped job needs tp= (or group-size=)")
    if groups is not None:
        if pp != 1 or dp != 1:
            raise RequestError("text", "give either groups= or pp=/dp=, not both")
        dp = groups
    return JobShape(tp=tp, pp=pp, dp=dp, **values).validated()  # type: ignore[arg-type]


_ALIASES = {"group-size": "tp", "memory": "mem", "min-mem": "mem", "exclude-hosts": "exclude"}

_SHAPE_OPTIONS = ("tp", "pp", "dp", "groups", "group-size", "model", "mem>=", "group-in", "job-in", "spread",
                  "exclude", "allow-unhealthy")  # fmt: skip


@dataclass
class RankSlot:
    """One rank of the job: which GPU, and its coordinates in the parallelism grid."""

    rank: int
    tp_rank: int
    pp_rank: int
    dp_rank: int
    host: str
    gpu_index: int
    gpu_uuid: str
    rail: int | None


@dataclass
class GroupPlacement:
    """One tensor-parallel group and the tier it actually got."""

    pp_rank: int
    dp_rank: int
    tier: Tier
    hosts: list[str]
    gpu_uuids: list[str]
    bottleneck_gbps: float | None


@dataclass
class LevelBandwidth:
    """The worst link a level's collective crosses (GB/s, one direction), as the replay models it."""

    level: str  # "tp" | "pp" | "dp"
    bottleneck_gbps: float | None
    note: str


@dataclass
class ShapedPlacement:
    shape: JobShape
    job_tier: Tier
    job_unit: str
    groups: list[GroupPlacement]
    ranks: list[RankSlot]
    bandwidth: list[LevelBandwidth]
    rail_aligned_share: float
    escalated: list[str] = field(default_factory=list)
    reason: str = ""
