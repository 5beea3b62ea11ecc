"""GPU identity from the PCI ids, and exact model names for placement.

Importers and collectors see a PCI vendor and device id (and a subsystem id) where the
SM version cannot tell a GB300 from a B300 or a 40 GB A100 from an 80 GB one. The table
(``gpu_models.csv``, one row per id with its source) gives model, memory, form factor and
scale-up link (NVLink or xGMI) generation and bandwidth.

Placement matches requests exactly on a family name ("H100": every H100 variant), a full
model name, or a row's alias, never by substring: "L4" is not "L40S", "A10" not "A100",
"B200" not "GB200". The family of a model string is its first word that is a known family.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

NVIDIA = "0x10de"
AMD = "0x1002"


@dataclass(frozen=True)
class GpuModel:
    vendor: str
    device: str
    subsystem: str | None
    model: str
    family: str
    memory_gib: float | None
    form_factor: str
    link: str | None  # "nvlink", "xgmi" or None (PCIe only)
    link_generation: int | None
    link_gbps: float | None  # one link, both directions
    links: int | None
    aliases: tuple[str, ...]
    source: str

    @property
    def memory_mib(self) -> int | None:
        return int(self.memory_gib * 1024) if self.memory_gib is not None else None

    @property
    def vendor_name(self) -> str:
        return "amd" if self.vendor == AMD else "nvidia" if self.vendor == NVIDIA else self.vendor


def _hex(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return f"0x{int(value, 16):04x}"
    except ValueError:
        return None


def _opt_float(value: str) -> float | None:
    return float(value) if value.strip() else None


def _opt_int(value: str) -> int | None:
    return int(value) if value.strip() else None


@cache
def table() -> tuple[GpuModel, ...]:
    text = resources.files("topo_facts").joinpath("gpu_models.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#"))
    out = []
    for r in rows:
        out.append(
            GpuModel(
                vendor=_hex(r["vendor"]) or r["vendor"],
                device=_hex(r["device"]) or r["device"],
                subsystem=_hex(r["subsystem"]),
                model=r["model"],
                family=r["family"],
                memory_gib=_opt_float(r["memory_gib"]),
                form_factor=r["form_factor"],
                link=r["link"] or None,
                link_generation=_opt_int(r["link_generation"]),
                link_gbps=_opt_float(r["link_gbps"]),
                links=_opt_int(r["links"]),
                aliases=tuple(a for a in r["aliases"].split(";") if a),
                source=r["source"],
            )
        )
    return tuple(out)


def by_pci(vendor: str | None, device: str | None, subsystem: str | None = None) -> GpuModel | None:
    """The row for these ids; a row naming the subsystem wins over one that does not."""
    v, d, s = _hex(vendor), _hex(device), _hex(subsystem)
    if v is None or d is None:
        return None
    rows = [r for r in table() if r.vendor == v and r.device == d]
    exact = [r for r in rows if r.subsystem is not None and r.subsystem == s]
    generic = [r for r in rows if r.subsystem is None]
    found = exact or generic
    return found[0] if found else None


def by_model(name: str) -> GpuModel | None:
    """The row a model or family name stands for, when all its rows agree on memory and links."""
    match = model_match(name)
    rows = [r for r in table() if match.matches(r.model)]
    facts = {(r.memory_gib, r.link, r.link_generation, r.link_gbps) for r in rows}
    return rows[0] if len(facts) == 1 else None


@lru_cache(maxsize=4096)
def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def normalised(model: str) -> str:
    """A requested model name as `model_match` reads it (lower case, whitespace collapsed): two
    names with one normalised form accept the same GPUs (an idempotency fingerprint uses it)."""
    return _norm(model)


_VENDOR_WORDS = frozenset({"nvidia", "amd", "tesla", "instinct", "radeon"})


def _words(model: str) -> list[str]:
    return [w for w in re.split(r"[\s\-_/,()]+", _norm(model)) if w]


@cache
def families() -> frozenset[str]:
    return frozenset(r.family.lower() for r in table())


@lru_cache(maxsize=4096)  # placement asks once per GPU judged: the model strings are few
def family_of(model: str) -> str | None:
    """'NVIDIA A100-SXM4-40GB' -> 'a100'; 'NVIDIA GB200' -> 'gb200'; None when no word is a family."""
    known = families()
    for word in _words(model):
        if word in known:
            return word
    return None


def vendor_of(model: str) -> str | None:
    """'amd' or 'nvidia' from a model string, when it says (its family or its first word)."""
    fam = family_of(model)
    if fam is not None:
        return next(r.vendor_name for r in table() if r.family.lower() == fam)
    first = _words(model)[:1]
    if first and first[0] in ("amd", "nvidia"):
        return first[0]
    return None


@dataclass(frozen=True)
class ModelMatch:
    """What a request's model name accepts: a family, or exact model names.

    `prefilter` is a lower-case substring of every model accepted: the candidate queries
    use it as a coarse pre-filter, and `matches` decides exactly.
    """

    requested: str
    family: str | None
    names: frozenset[str]
    prefilter: str

    def matches(self, model: str) -> bool:
        if self.family is not None:
            return family_of(model) == self.family
        return _norm(model) in self.names or _strip_vendor(model) in self.names


@lru_cache(maxsize=4096)
def _strip_vendor(model: str) -> str:
    return " ".join(w for w in _norm(model).split(" ") if w not in _VENDOR_WORDS)


def model_match(requested: str) -> ModelMatch:
    """Resolve a request's model: a family ("H100"), an alias ("A100-80GB"), or a full model name."""
    low = _norm(requested)
    bare = _strip_vendor(requested)
    for name in (low, bare):
        if name in families():
            return ModelMatch(requested, name, frozenset(), name)
    rows = [
        r for r in table() if {low, bare} & ({_norm(a) for a in r.aliases} | {_norm(r.model), _strip_vendor(r.model)})
    ]
    if rows:
        names = ({low, bare} | {_norm(r.model) for r in rows} | {_strip_vendor(r.model) for r in rows}) - {""}
        fams = {r.family.lower() for r in rows}
        return ModelMatch(requested, None, frozenset(names), _prefilter(names, fams.pop() if len(fams) == 1 else ""))
    names = {low, bare} - {""}  # "nvidia" alone: no vendor-less name, else every vendor-only model matched
    return ModelMatch(requested, None, frozenset(names), _prefilter(names, bare))


def _prefilter(names: set[str], preferred: str) -> str:
    """The longest text inside one word of every accepted name: `preferred` when it is one.

    Why a word: a stored model is accepted when its normalised name, or that name without its
    vendor words, is one of `names`. Normalising collapses whitespace and dropping vendor words
    removes whole words, so only a single word of an accepted name is sure to appear in the
    stored text itself, which is what the store's lower-case substring test sees (`Acme amd X1`
    is accepted for `Acme X1`, and `acme x1` is not inside it; an alias `MI250` is accepted
    beside the family `MI250X`). Empty (every unit passes to the exact test) when no word is.
    """
    words = [n.split(" ") for n in names]

    def inside_every(text: str) -> bool:
        return all(any(text in word for word in ws) for ws in words)

    if preferred and inside_every(preferred):
        return preferred
    candidates = sorted({w for ws in words for w in ws}, key=lambda w: (-len(w), w))
    return next((w for w in candidates if inside_every(w)), "")
