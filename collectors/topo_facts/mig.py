"""MIG profile names, derived as ``nvidia-smi mig -lgip`` names them, for collectors and the service.

A GPU instance profile is named ``<slices>g.<memory>gb``: the compute slices it has and its
memory, not as measured but as the board's nominal memory times the eighths of memory it
gets (a profile's memory is whole eighths of the board's on every MIG GPU; the A30's quarters
are two eighths each). The measured size is always a little less than the name says (an
H100 80GB's 3g.40gb instance has 39.5 GiB, its whole board 79.6 GiB), so rounding the measured
size alone names some profiles wrongly (A100 80GB's 7g.80gb measures 79 GiB); the share of
the board does not.
"""

from __future__ import annotations

import math
import re

# The profiles the driver offers on each MIG-capable board (NVIDIA MIG user guide, `nvidia-smi mig -lgip`).
PROFILES_BY_BOARD: dict[str, tuple[str, ...]] = {
    "A30 24GB": ("1g.6gb", "2g.12gb", "4g.24gb"),
    "A100 40GB": ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100 80GB": ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100 80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100 NVL 94GB": ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "H200 141GB": ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "B200 180GB": ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
}
KNOWN_PROFILES: frozenset[str] = frozenset(p for profiles in PROFILES_BY_BOARD.values() for p in profiles)
# Media-extension variants (1g.10gb+me) are the same slices with the media engines attached.
PROFILE_PATTERN = r"^[1-8]g\.[1-9][0-9]{0,3}gb(\+me)?$"
_PROFILE = re.compile(PROFILE_PATTERN)
MAX_SLICES_PER_GPU = 7  # seven 1g instances is the most any MIG GPU holds


def is_profile(text: str) -> bool:
    """Does the text look like a GPU instance profile name (3g.40gb, 1g.10gb+me)?"""
    return bool(_PROFILE.match(text))


def profile_slices(profile: str) -> int:
    """Compute slices of a profile: 3 for 3g.40gb."""
    return int(profile.split("g.", 1)[0])


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def nominal_gb(gpu_memory_mib: int) -> int:
    """The board's marketed size from its measured memory: 81559 MiB (79.65 GiB) is an 80GB board."""
    return math.ceil(gpu_memory_mib / 1024 - 0.01)


def profile_name(slices: int, memory_mib: int, gpu_memory_mib: int | None = None) -> str:
    """The profile nvidia-smi shows for an instance of `slices` compute slices and `memory_mib`.

    With the board's memory the name is its nominal size times the instance's eighths of it,
    rounded half up (H200: 1/8 of 141 is 17.6, named 18). Without it, the measured size rounded
    up, which names every A100 40GB and H100 80GB profile correctly.
    """
    if gpu_memory_mib:
        eighths = max(1, min(8, _half_up(memory_mib / gpu_memory_mib * 8)))
        gb = _half_up(nominal_gb(gpu_memory_mib) * eighths / 8)
    else:
        gb = math.ceil(memory_mib / 1024 - 0.01)
    return f"{slices}g.{max(gb, 1)}gb"
