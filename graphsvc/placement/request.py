"""The placement request, its validation, and the compact text form.

Text form (one function parses it for the CLI and for GraphQL)::

    8xH100 nvlink=full-mesh ib-hops<=1
    16xGB200 nvlink=full-mesh
    32xH100 per-host=8 rail-aligned ib-hops<=1 mem>=79 temp<=85   (an "80 GB" H100 has 79.6 GiB)
    4 nvlink=any exclude=node-a,node-b limit=5 packing=spread allow-unhealthy
    2x 3g.40gb model=H100 exclude=node-a          (MIG slices: a count, then a profile)

Semantics: ``nvlink`` applies to the whole set of GPUs, or to each host's share when
``per-host`` is given. ``full-mesh`` means every pair of chosen GPUs is directly
NVLink-connected (through a shared NVSwitch, the same NVL72 clique, or a direct link);
``any`` means all chosen GPUs are in one NVLink domain; ``none`` asks nothing. On AMD GPUs
the scale-up link is xGMI: ``scale-up=`` (or ``xgmi=``) is the same option as ``nvlink=``.
A MIG profile after the count (``2x 3g.40gb``; ``2x3g.40gb`` is the same) asks for that many
MIG slices instead of whole GPUs (``placement.mig``, docs/placement.md).
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property, lru_cache

from topo_facts.gpu_models import ModelMatch, model_match
from topo_facts.mig import is_profile
from topo_facts.models import UNPRINTABLE

from graphsvc.placement.capabilities import CapabilityNeeds, parse_cc
from graphsvc.placement.options import OPTIONS

MAX_GPUS = 4096
MAX_TEXT = 4096  # characters of a request's text form
MAX_LIMIT = 20
MAX_MEMORY_GIB = 1_000_000  # per GPU; larger (or NaN, or infinite) is a mistake, and no store parameter


class NVLinkRequirement(StrEnum):
    NONE = "none"
    ANY = "any"
    FULL_MESH = "full-mesh"


class Packing(StrEnum):
    BEST_FIT = "best-fit"
    SPREAD = "spread"


class RequestError(ValueError):
    """A request that cannot be understood or can never be met, naming the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _check_names(name_field: str, names: tuple[str, ...]) -> None:
    """Host and site names as the graph can hold them, so both stores answer alike.

    A comma: no host or site name holds one (topo_facts HostName, the site catalog), so such an
    entry matches nothing, and its text form (format_request, the idempotency fingerprint) would
    read as the list it looks like. An unprintable character (topo_facts.models.UNPRINTABLE, the
    rule fact documents and reservation labels follow): no stored name holds one either, and a NUL
    reached the store, where Neo4j matched nothing and reserved while FalkorDB refused the
    statement (an untyped 422 and a failed query in the log)."""
    if any("," in name for name in names):
        raise RequestError(name_field, "a name holds no comma: give each one as its own list entry")
    bad = next((name for name in names if UNPRINTABLE.search(name)), None)
    if bad is not None:
        raise RequestError(
            name_field, f"{bad!r} holds a control character, line break or bidi control; no host or site name does"
        )


@dataclass(frozen=True)
class PlacementRequest:
    gpus: int
    model: str | None = None
    min_memory_gib: float | None = None
    nvlink: NVLinkRequirement = NVLinkRequirement.NONE
    gpus_per_host: int | None = None
    max_ib_hops: int | None = None
    same_nvlink_domain: bool = False
    rail_aligned: bool = False
    gpu_nic_affinity: bool = False
    max_temperature_c: float | None = None
    exclude_unhealthy: bool = True
    exclude_hosts: tuple[str, ...] = ()
    limit: int = 3
    # The job needs the GPUs to itself: GPUs busy outside the service's reservations are not free.
    exclusive: bool = False
    # What the GPUs must be able to do (compute capability, memory bandwidth, FP8/FP4, link generation).
    capabilities: CapabilityNeeds = field(default_factory=CapabilityNeeds)
    # Soft preferences: they order candidates, never exclude one.
    prefer_hosts: tuple[str, ...] = ()
    packing: Packing = Packing.BEST_FIT
    cooler_gpus: bool = True
    # Sites (docs/sites.md): only these sites (empty: any), and whether one placement may span sites.
    sites: tuple[str, ...] = ()
    cross_site: bool = False
    # MIG: `gpus` counts slices of this GPU instance profile (3g.40gb), never whole GPUs.
    mig_profile: str | None = None

    def validated(self) -> PlacementRequest:
        if not 1 <= self.gpus <= MAX_GPUS:
            raise RequestError("gpus", f"must be between 1 and {MAX_GPUS}")
        if self.gpus_per_host is not None:
            if self.gpus_per_host < 1:
                raise RequestError("gpusPerHost", "must be at least 1")
            if self.gpus % self.gpus_per_host:
                raise RequestError(
                    "gpusPerHost", f"{self.gpus} GPUs cannot be split evenly {self.gpus_per_host} a host"
                )
        if self.max_ib_hops is not None and not 0 <= self.max_ib_hops <= 16:
            raise RequestError("maxIbHops", "must be between 0 and 16")
        if self.min_memory_gib is not None and not 0 <= self.min_memory_gib <= MAX_MEMORY_GIB:
            raise RequestError("minMemoryGiB", f"must be between 0 and {MAX_MEMORY_GIB} GiB")
        if self.max_temperature_c is not None and not -273 <= self.max_temperature_c <= 1000:
            raise RequestError("maxTemperatureC", "must be between -273 and 1000 degrees C")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise RequestError("limit", f"must be between 1 and {MAX_LIMIT}")
        if self.model is not None and (not self.model.strip() or len(self.model) > 128):
            raise RequestError("model", "must be 1 to 128 characters")
        if len(self.exclude_hosts) > 10_000 or len(self.prefer_hosts) > 1000:
            raise RequestError("excludeHosts", "too many hosts listed")
        for name_field, names in (("excludeHosts", self.exclude_hosts), ("preferences.hosts", self.prefer_hosts),
                                  ("sites", self.sites)):  # fmt: skip
            _check_names(name_field, names)
        caps = self.capabilities
        if caps.min_memory_bandwidth_gbps is not None and not 0 <= caps.min_memory_bandwidth_gbps <= 100_000:
            raise RequestError("minMemoryBandwidthGBps", "must be between 0 and 100000 GB/s")
        if caps.min_link_generation is not None and not 1 <= caps.min_link_generation <= 20:
            raise RequestError("minLinkGeneration", "must be between 1 and 20")
        cc = caps.min_compute_capability
        if cc is not None and not (0 <= cc[0] <= 99 and 0 <= cc[1] <= 9):
            raise RequestError("minComputeCapability", "must look like 9.0 (major 0-99, minor 0-9)")
        if len(self.sites) > 100 or any(not 0 < len(s) <= 128 for s in self.sites):
            raise RequestError("sites", "at most 100 site names of 1 to 128 characters")
        if self.mig_profile is not None:
            self._validate_mig()
        return self

    def _validate_mig(self) -> None:
        """Slices are asked by count, profile and the parent GPU's model, health and host only."""
        assert self.mig_profile is not None
        if not is_profile(self.mig_profile):
            raise RequestError(
                "migProfile", f"{self.mig_profile!r} is not a MIG profile; profiles look like 3g.40gb or 1g.10gb"
            )
        default = PlacementRequest(gpus=self.gpus, mig_profile=self.mig_profile)
        unsupported = [
            name
            for name in ("min_memory_gib", "nvlink", "gpus_per_host", "max_ib_hops", "same_nvlink_domain",
                         "rail_aligned", "gpu_nic_affinity", "max_temperature_c", "exclusive", "capabilities",
                         "packing", "sites", "cross_site")
            if getattr(self, name) != getattr(default, name)
        ]  # fmt: skip
        if unsupported:
            raise RequestError(
                "migProfile",
                f"MIG slices are asked by count, profile, model, exclude, prefer, limit and allow-unhealthy; "
                f"not by {', '.join(unsupported)}",
            )

    @cached_property
    def site_set(self) -> frozenset[str]:
        return frozenset(self.sites)

    @property
    def needs_one_domain(self) -> bool:
        """The whole set must sit in one NVLink domain (possibly spanning hosts, as on NVL72).

        A single GPU has no pair to connect: NVLink requirements hold for it vacuously.
        """
        wants_nvlink = self.nvlink is not NVLinkRequirement.NONE or self.same_nvlink_domain
        return self.gpus_per_host is None and self.gpus > 1 and wants_nvlink

    @cached_property
    def model_match(self) -> ModelMatch | None:
        """Exact model matching: a family ("H100"), an alias, or a full name; never a substring."""
        return model_match(self.model) if self.model else None

    @cached_property
    def excluded(self) -> frozenset[str]:
        """`exclude_hosts` as a set: every search path checks each GPU's host against it."""
        return frozenset(self.exclude_hosts)

    def with_(self, **changes: object) -> PlacementRequest:
        return replace(self, **changes)  # type: ignore[arg-type]


_COUNT = re.compile(r"^(\d+)(?:x(.+))?$", re.IGNORECASE | re.ASCII)
# Anything shaped like a MIG profile (3g.40gb) asks for slices; validation names a wrong one.
_LOOKS_MIG = re.compile(r"^\d+g\.\d+", re.IGNORECASE | re.ASCII)
_OPTION = re.compile(r"^([a-z][a-z-]*)\s*(<=|>=|=)\s*(.+)$", re.IGNORECASE)
_EMPTY_OPTION = re.compile(r"([a-z][a-z-]*)\s*(<=|>=|=)", re.IGNORECASE)  # an option with no value: not _OPTION


def parse_request(text: str) -> PlacementRequest:
    """Parse the compact text form; errors name the token at fault."""
    return _parsed_short(text) if len(text) <= PARSED_KEPT_UP_TO else _parsed(text)


# Schedulers send the same few request texts again and again; a PlacementRequest is frozen, so one
# parse serves every caller of a text (~11 us a parse; an error is raised anew each time, never
# kept). Only short texts are kept (the common requests), so the cache holds at most ~1 MB.
PARSED_KEPT_UP_TO = 256


@lru_cache(maxsize=1024)
def _parsed_short(text: str) -> PlacementRequest:
    return _parsed(text)


def _parsed(text: str) -> PlacementRequest:
    if len(text) > MAX_TEXT:
        raise RequestError("text", f"longer than {MAX_TEXT} characters")
    tokens = _words(text)
    if not tokens:
        raise RequestError("text", "empty request; start with a GPU count such as 8xH100")
    if len(tokens) > 1 and re.fullmatch(r"\d+x", tokens[0], re.IGNORECASE | re.ASCII) and _LOOKS_MIG.match(tokens[1]):
        tokens = [tokens[0] + tokens[1], *tokens[2:]]  # "2x 3g.40gb": a count of MIG slices
    m = _COUNT.match(tokens[0])
    if not m:
        raise RequestError("text", f"{tokens[0]!r}: start with a GPU count such as 8 or 8xH100")
    values: dict[str, object] = {"gpus": int(m.group(1))}
    given: set[str] = set()
    if m.group(2) and _LOOKS_MIG.match(m.group(2)):
        values["mig_profile"] = m.group(2).lower()
    elif m.group(2):
        values["model"] = m.group(2)
        given.add("model")
    for token in tokens[1:]:
        _once(token, given)
        _apply(token, values)
    try:
        return PlacementRequest(**values).validated()  # type: ignore[arg-type]
    except TypeError as exc:  # pragma: no cover - guarded by _apply
        raise RequestError("text", str(exc)) from None


_FLAGS = {
    "same-domain": ("same_nvlink_domain", True),
    "same-nvlink-domain": ("same_nvlink_domain", True),
    "rail-aligned": ("rail_aligned", True),
    "gpu-nic-affinity": ("gpu_nic_affinity", True),
    "nic-affinity": ("gpu_nic_affinity", True),
    "allow-unhealthy": ("exclude_unhealthy", False),
    "no-prefer-cool": ("cooler_gpus", False),
    "cross-site": ("cross_site", True),
    "exclusive": ("exclusive", True),
}
_CAPABILITY_FLAGS = {"fp8": "fp8", "fp4": "fp4"}


_KEYS = ["nvlink", "scale-up", "xgmi", "ib-hops", "max-ib-hops", "hops", "per-host", "gpus-per-host", "mem",
         "min-mem", "memory", "temp", "max-temp", "temperature", "model", "exclude", "exclude-hosts", "prefer",
         "prefer-hosts", "limit", "packing", "cc", "compute-capability", "mem-bw", "memory-bandwidth", "link-gen",
         "nvlink-gen", "site", "sites"]  # fmt: skip


# Each option with a value under the name the request echo writes: its other spellings set the
# same field, so `nvlink=full-mesh xgmi=none` is nvlink given twice.
_CANONICAL = {
    "scale-up": "nvlink", "xgmi": "nvlink", "max-ib-hops": "ib-hops", "hops": "ib-hops", "gpus-per-host": "per-host",
    "min-mem": "mem", "memory": "mem", "max-temp": "temp", "temperature": "temp", "exclude-hosts": "exclude",
    "prefer-hosts": "prefer", "sites": "site", "compute-capability": "cc", "memory-bandwidth": "mem-bw",
    "nvlink-gen": "link-gen",
}  # fmt: skip


def _once(token: str, given: set[str]) -> None:
    """An option with a value is given once: twice, the last silently won (`8xH100 nvlink=full-mesh
    nvlink=none` asked for no NVLink, and the echo showed only `8xH100`), so a request assembled
    from two sources asked for what neither meant. Lists are one comma-separated value
    (`exclude=a,b`), so no option repeats; a flag twice is the flag, and the model may come
    after the count or as `model=`, not both."""
    m = _OPTION.match(token)
    if not m:
        return
    key = m.group(1).lower()
    name = _CANONICAL.get(key, key)
    if name not in _KEYS:
        return  # an unknown option: _apply names it
    if name in given:
        spelled = f" (as {key})" if key != name else ""
        raise RequestError("text", f"{token!r}: {name} given twice{spelled}; give each option once")
    given.add(name)


def _unknown(token: str, word: str, known: list[str]) -> RequestError:
    """An unknown option, with the nearest known spelling and where the full list is."""
    close = difflib.get_close_matches(word.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return RequestError(
        "text", f"{token!r}: unknown option {word!r}{hint} (options: {', '.join(OPTIONS)}; see `graphsvc place --help`)"
    )


# A decimal number as people write one: Python's float() also takes nan, inf, 1_0 and 0x-less
# oddities, and nan or inf became a store parameter nothing could answer (a 500, #15 review).
# ASCII digits only: \d and int() also take other scripts' digits (a probe's `８xH100`).
_DECIMAL = re.compile(r"^[+-]?(?:\d{1,12}(?:\.\d{0,12})?|\.\d{1,12})(?:e[+-]?\d{1,3})?$", re.IGNORECASE | re.ASCII)
_WHOLE = re.compile(r"^[+-]?\d{1,9}$", re.ASCII)


def parse_number(token: str, raw: str, unit: str = "") -> float:
    """A decimal number (`_DECIMAL`), less `unit`; anything else is a RequestError naming the token."""
    cleaned = raw.lower().removesuffix(unit.lower()) if unit else raw
    value = float(cleaned) if _DECIMAL.match(cleaned) else math.nan
    if not math.isfinite(value):
        raise RequestError("text", f"{token!r}: {raw!r} is not a number")
    return value


def _whole(token: str, raw: str) -> int:
    if not _WHOLE.match(raw):
        raise RequestError("text", f"{token!r}: {raw!r} is not a whole number (digits 0-9, at most 9)")
    return int(raw)


def _caps(values: dict[str, object], **change: object) -> None:
    current = values.get("capabilities", CapabilityNeeds())
    assert isinstance(current, CapabilityNeeds)
    values["capabilities"] = replace(current, **change)  # type: ignore[arg-type]


def _apply(token: str, values: dict[str, object]) -> None:
    low = token.lower()
    if low in _FLAGS:
        key, value = _FLAGS[low]
        values[key] = value
        return
    if low in _CAPABILITY_FLAGS:
        _caps(values, **{_CAPABILITY_FLAGS[low]: True})
        return
    m = _OPTION.match(token)
    if not m:
        empty = _EMPTY_OPTION.fullmatch(token)
        if empty and empty.group(1).lower() in _KEYS:  # `exclude=`: was "unknown option; did you mean 'exclude'?"
            raise RequestError("text", f"{token!r}: give {empty.group(1).lower()} a value")
        raise _unknown(token, re.split(r"[<>=]", token, maxsplit=1)[0], [*_FLAGS, *_CAPABILITY_FLAGS, *_KEYS])
    key, op, raw = m.group(1).lower(), m.group(2), m.group(3)

    def need(*ops: str) -> None:
        if op not in ops:
            raise RequestError("text", f"{token!r}: use {' or '.join(ops)} with {key}")

    if key in ("nvlink", "scale-up", "xgmi"):  # any vendor's scale-up link: NVLink or AMD xGMI
        need("=")
        try:
            values["nvlink"] = NVLinkRequirement(raw.lower().replace("_", "-").replace("fullmesh", "full-mesh"))
        except ValueError:
            raise RequestError("text", f"{token!r}: nvlink is none, any or full-mesh") from None
    elif key in ("ib-hops", "max-ib-hops", "hops"):
        need("<=", "=")
        values["max_ib_hops"] = _whole(token, raw)
    elif key in ("per-host", "gpus-per-host"):
        need("=")
        values["gpus_per_host"] = _whole(token, raw)
    elif key in ("mem", "min-mem", "memory"):
        need(">=", "=")
        values["min_memory_gib"] = parse_number(token, raw, "gib")
    elif key in ("temp", "max-temp", "temperature"):
        need("<=", "=")
        values["max_temperature_c"] = parse_number(token, raw, "c")
    elif key == "model":
        need("=")
        values["model"] = raw
    elif key in ("exclude", "exclude-hosts"):
        need("=")
        values["exclude_hosts"] = tuple(h for h in raw.split(",") if h)
    elif key in ("prefer", "prefer-hosts"):
        need("=")
        values["prefer_hosts"] = tuple(h for h in raw.split(",") if h)
    elif key in ("site", "sites"):
        need("=")
        values["sites"] = tuple(h for h in raw.split(",") if h)
    elif key == "limit":
        need("=")
        values["limit"] = _whole(token, raw)
    elif key in ("cc", "compute-capability"):
        need(">=")
        try:
            _caps(values, min_compute_capability=parse_cc(raw))
        except ValueError as err:
            raise RequestError("text", f"{token!r}: {err}") from None
    elif key in ("mem-bw", "memory-bandwidth"):
        need(">=")
        _caps(values, min_memory_bandwidth_gbps=parse_number(token, raw, "gb/s"))
    elif key in ("link-gen", "nvlink-gen"):
        need(">=")
        _caps(values, min_link_generation=_whole(token, raw))
    elif key == "packing":
        need("=")
        try:
            values["packing"] = Packing(raw.lower())
        except ValueError:
            raise RequestError("text", f"{token!r}: packing is best-fit or spread") from None
    else:
        raise _unknown(token, key, _KEYS)


def _words(text: str) -> list[str]:
    """The text's words: split at whitespace, where quotes may hold a word together, so a model
    name with a space can be asked for (`2x"Acme X1"`, `model='Acme X1'`; it could be reserved
    through GraphQL's model field only). Without a quote, `str.split` (~0.3 us; shlex ~55 us). With
    one, shlex with `str.split`'s whitespace and no backslash escapes (a backslash is a character)."""
    if '"' not in text and "'" not in text:
        return text.split()
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.whitespace = "".join({c for c in text if c.isspace()}) or " "
    lexer.escape = ""
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as err:
        raise RequestError("text", f"{err}: close each quote") from None


def _quoted(word: str) -> str:
    """A value as one word of the text form: quoted where whitespace or a quote would split it."""
    try:
        plain = _words(word) == [word]
    except RequestError:  # an unclosed quote in the value
        plain = False
    return word if plain else shlex.quote(word)


def _decimal(value: float) -> str:
    """A bound as the text form reads it back (_DECIMAL: 12 places at most), without trailing
    zeros. Not `:g`, which kept 6 significant digits: `mem-bw>=3350` and `3350.001` printed
    alike, so a reservation's request text lost the bound, and the idempotency fingerprint (a
    digest of this text) replayed one request's reservation for the other."""
    return f"{value:.12f}".rstrip("0").rstrip(".")


def format_request(req: PlacementRequest) -> str:
    """The canonical text form; parse_request(format_request(r)) == r."""
    model = _quoted(req.model) if req.model else None
    parts = [f"{req.gpus}x{model}" if model else str(req.gpus)]
    if req.mig_profile is not None:
        parts = [f"{req.gpus}x {req.mig_profile}", *([f"model={model}"] if model else [])]
    if req.nvlink is not NVLinkRequirement.NONE:
        parts.append(f"nvlink={req.nvlink.value}")
    if req.gpus_per_host is not None:
        parts.append(f"per-host={req.gpus_per_host}")
    if req.max_ib_hops is not None:
        parts.append(f"ib-hops<={req.max_ib_hops}")
    if req.min_memory_gib is not None:
        parts.append(f"mem>={_decimal(req.min_memory_gib)}")
    if req.max_temperature_c is not None:
        parts.append(f"temp<={_decimal(req.max_temperature_c)}")
    for flag, (key, value) in _FLAGS.items():
        if getattr(req, key) == value and flag not in ("same-domain", "nic-affinity"):
            parts.append(flag)
    caps = req.capabilities
    if caps.min_compute_capability is not None:
        parts.append(f"cc>={caps.min_compute_capability[0]}.{caps.min_compute_capability[1]}")
    if caps.min_memory_bandwidth_gbps is not None:
        parts.append(f"mem-bw>={_decimal(caps.min_memory_bandwidth_gbps)}")
    parts += [flag for flag, key in _CAPABILITY_FLAGS.items() if getattr(caps, key)]
    if caps.min_link_generation is not None:
        parts.append(f"link-gen>={caps.min_link_generation}")
    if req.exclude_hosts:
        parts.append("exclude=" + _quoted(",".join(req.exclude_hosts)))
    if req.prefer_hosts:
        parts.append("prefer=" + _quoted(",".join(req.prefer_hosts)))
    if req.packing is not Packing.BEST_FIT:
        parts.append(f"packing={req.packing.value}")
    if req.sites:
        parts.append("site=" + _quoted(",".join(req.sites)))
    if req.limit != 3:
        parts.append(f"limit={req.limit}")
    return " ".join(parts)
