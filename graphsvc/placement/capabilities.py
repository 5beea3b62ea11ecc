"""What a GPU model can do: compute capability, memory bandwidth, FP8/FP4, scale-up link generation.

A request may ask for capabilities instead of (or as well as) a model: "compute capability 9.0
or newer", "at least 3 TB/s of memory bandwidth", "FP8 tensor cores", "NVLink 5". The facts
are per model family from the vendors' public data sheets, with per-model rows where variants
differ (an H100 PCIe has 2.0 TB/s, an SXM board 3.35); the scale-up link generation comes from
the collector's model table (topo_facts/gpu_models.csv). A GPU whose model is not in the table
does not meet a capability constraint (unknown is not "yes"), and the reason says so.

Compute capability is NVIDIA's numbering; AMD Instinct GPUs have none (their ISA is gfx9xx),
so a `cc>=` request means NVIDIA. FP8 counts as supported where the tensor cores or matrix
cores compute in FP8 (Hopper, Ada, Blackwell; CDNA3 and later); FP4 likewise (Blackwell,
CDNA4).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from topo_facts.gpu_models import by_model, family_of


@dataclass(frozen=True)
class Capability:
    compute_capability: tuple[int, int] | None
    memory_bandwidth_gbps: float  # GB/s, the slowest variant of the family unless a model row says
    fp8: bool
    fp4: bool
    source: str


_SHEETS = "vendor data sheet"
# family -> facts (the slowest memory of the family's variants, so a family never over-promises)
FAMILIES: dict[str, Capability] = {
    "v100": Capability((7, 0), 900.0, False, False, f"NVIDIA V100 {_SHEETS}"),
    "v100s": Capability((7, 0), 1134.0, False, False, f"NVIDIA V100S {_SHEETS}"),
    "a100": Capability((8, 0), 1555.0, False, False, f"NVIDIA A100 {_SHEETS} (40GB PCIe 1,555 GB/s)"),
    "a10": Capability((8, 6), 600.0, False, False, f"NVIDIA A10 {_SHEETS}"),
    "a40": Capability((8, 6), 696.0, False, False, f"NVIDIA A40 {_SHEETS}"),
    "l4": Capability((8, 9), 300.0, True, False, f"NVIDIA L4 {_SHEETS}"),
    "l40": Capability((8, 9), 864.0, True, False, f"NVIDIA L40 {_SHEETS}"),
    "l40s": Capability((8, 9), 864.0, True, False, f"NVIDIA L40S {_SHEETS}"),
    "h100": Capability((9, 0), 2000.0, True, False, f"NVIDIA H100 {_SHEETS} (PCIe 2.0 TB/s)"),
    "h800": Capability((9, 0), 2000.0, True, False, f"NVIDIA H800 {_SHEETS}"),
    "h200": Capability((9, 0), 4800.0, True, False, f"NVIDIA H200 {_SHEETS}"),
    "b200": Capability((10, 0), 8000.0, True, True, f"NVIDIA B200 {_SHEETS} (HGX B200)"),
    "gb200": Capability((10, 0), 8000.0, True, True, f"NVIDIA GB200 NVL72 {_SHEETS}"),
    "b300": Capability((10, 3), 8000.0, True, True, f"NVIDIA B300 {_SHEETS} (HGX B300)"),
    "gb300": Capability((10, 3), 8000.0, True, True, f"NVIDIA GB300 NVL72 {_SHEETS}"),
    "mi100": Capability(None, 1228.8, False, False, f"AMD Instinct MI100 {_SHEETS}"),
    "mi210": Capability(None, 1638.4, False, False, f"AMD Instinct MI210 {_SHEETS}"),
    "mi250x": Capability(None, 3276.8, False, False, f"AMD Instinct MI250X {_SHEETS}"),
    "mi300a": Capability(None, 5300.0, True, False, f"AMD Instinct MI300A {_SHEETS}"),
    "mi300x": Capability(None, 5300.0, True, False, f"AMD Instinct MI300X {_SHEETS}"),
    "mi308x": Capability(None, 5300.0, True, False, f"AMD Instinct MI308X {_SHEETS}"),
    "mi325x": Capability(None, 6000.0, True, False, f"AMD Instinct MI325X {_SHEETS}"),
    "mi350x": Capability(None, 8000.0, True, True, f"AMD Instinct MI350X {_SHEETS}"),
    "mi355x": Capability(None, 8000.0, True, True, f"AMD Instinct MI355X {_SHEETS}"),
}

# Exact model names whose memory is faster than their family's slowest variant.
MODEL_BANDWIDTH_GBPS: dict[str, float] = {
    "nvidia a100-sxm4-40gb": 1555.0,
    "nvidia a100-sxm4-80gb": 2039.0,
    "nvidia a100 80gb pcie": 1935.0,
    "nvidia h100 80gb hbm3": 3350.0,
    "nvidia h100 nvl": 3900.0,
    "nvidia h100 pcie": 2000.0,
}


@lru_cache(maxsize=1024)
def capability_of(model: str) -> Capability | None:
    fam = family_of(model)
    base = FAMILIES.get(fam) if fam else None
    if base is None:
        return None
    exact = MODEL_BANDWIDTH_GBPS.get(" ".join(model.lower().split()))
    if exact is None:
        return base
    return Capability(base.compute_capability, exact, base.fp8, base.fp4, base.source)


@lru_cache(maxsize=1024)
def link_generation_of(model: str) -> int | None:
    row = by_model(model)
    return row.link_generation if row is not None else None


def parse_cc(text: str) -> tuple[int, int]:
    """'9.0' -> (9, 0); '10' -> (10, 0). Raises ValueError on anything else."""
    major, _, minor = text.strip().partition(".")
    if not major.isdigit() or (minor and not minor.isdigit()) or len(text) > 8:
        raise ValueError(f"{text!r} is not a compute capability such as 9.0")
    return int(major), int(minor or 0)


@dataclass(frozen=True)
class CapabilityNeeds:
    """The capability constraints of one request (all optional)."""

    min_compute_capability: tuple[int, int] | None = None
    min_memory_bandwidth_gbps: float | None = None
    fp8: bool = False
    fp4: bool = False
    min_link_generation: int | None = None

    def __bool__(self) -> bool:
        return any(
            (self.min_compute_capability, self.min_memory_bandwidth_gbps, self.fp8, self.fp4, self.min_link_generation)
        )

    def unmet(self, model: str) -> str | None:
        """Why a GPU of this model does not meet the needs, or None when it does."""
        cap = capability_of(model)
        if cap is None:
            return f"{model!r}: capabilities unknown"
        cc = cap.compute_capability
        if self.min_compute_capability is not None and (cc is None or cc < self.min_compute_capability):
            have = "none (not NVIDIA)" if cc is None else f"{cc[0]}.{cc[1]}"
            want = self.min_compute_capability
            return f"compute capability {have} < {want[0]}.{want[1]}"
        if self.min_memory_bandwidth_gbps is not None and cap.memory_bandwidth_gbps < self.min_memory_bandwidth_gbps:
            return f"memory bandwidth {cap.memory_bandwidth_gbps:g} GB/s < {self.min_memory_bandwidth_gbps:g}"
        if self.fp8 and not cap.fp8:
            return "no FP8"
        if self.fp4 and not cap.fp4:
            return "no FP4"
        if self.min_link_generation is not None:
            gen = link_generation_of(model)
            if gen is None or gen < self.min_link_generation:
                return f"scale-up link generation {gen if gen is not None else 'none'} < {self.min_link_generation}"
        return None
