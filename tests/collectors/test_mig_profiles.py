"""MIG profile names derived from slices and memory, as nvidia-smi names them (topo_facts.mig)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from topo_facts import GPUFact, HostFacts, MigSliceFact
from topo_facts.mig import KNOWN_PROFILES, PROFILES_BY_BOARD, is_profile, profile_name

# (slices, profile memory MiB from the device attributes, board MiB from NVML) -> name, per `nvidia-smi mig -lgip`.
CASES = [
    (1, 4864, 40960, "1g.5gb"),
    (2, 9984, 40960, "2g.10gb"),
    (3, 20096, 40960, "3g.20gb"),
    (4, 20096, 40960, "4g.20gb"),
    (7, 40448, 40960, "7g.40gb"),
    (1, 9984, 81559, "1g.10gb"),
    (1, 20096, 81559, "1g.20gb"),
    (2, 20096, 81559, "2g.20gb"),
    (3, 40448, 81559, "3g.40gb"),
    (4, 40448, 81559, "4g.40gb"),
    (7, 81152, 81559, "7g.80gb"),
    (7, 80896, 81920, "7g.80gb"),  # A100 80GB: 79 GiB measured; rounding the size alone says 7g.79gb
    (1, 5952, 24576, "1g.6gb"),  # A30: quarters of the board
    (1, 16896, 143771, "1g.18gb"),  # H200: 1/8 of 141 GB is 17.6
    (2, 33792, 143771, "2g.35gb"),
    (3, 67840, 143771, "3g.71gb"),
    (1, 11776, 95830, "1g.12gb"),  # H100 NVL 94GB
]


@pytest.mark.parametrize(("slices", "memory", "board", "name"), CASES)
def test_profile_name_matches_nvidia_smi(slices: int, memory: int, board: int, name: str) -> None:
    assert profile_name(slices, memory, board) == name


@pytest.mark.parametrize(
    ("slices", "memory", "name"), [(3, 40448, "3g.40gb"), (1, 4864, "1g.5gb"), (7, 81152, "7g.80gb")]
)
def test_without_the_board_size_the_measured_size_rounds_up(slices: int, memory: int, name: str) -> None:
    assert profile_name(slices, memory) == name


def test_every_known_profile_is_well_formed() -> None:
    assert all(is_profile(p) for p in KNOWN_PROFILES)
    assert "3g.40gb" in PROFILES_BY_BOARD["H100 80GB"] and "3g.20gb" in PROFILES_BY_BOARD["A100 40GB"]
    assert not is_profile("3g.40") and not is_profile("9g.40gb") and not is_profile("3G.40GB")


def _host(**gpu: object) -> HostFacts:
    base = {"uuid": "GPU-a", "index": 0, "model": "NVIDIA H100 80GB HBM3", "mig_mode": True}
    return HostFacts(
        hostname="h",
        collected_at="2026-01-01T00:00:00Z",
        collector_version="t",
        gpus=[GPUFact(**{**base, **gpu})],
    )


def test_slices_need_mig_mode_and_unique_ids() -> None:
    one = MigSliceFact(uuid="MIG-1", gpu_instance_id=1, profile="3g.40gb")
    assert _host(mig_slices=[one]).gpus[0].mig_slices == [one]
    with pytest.raises(ValidationError, match="mig_mode is not true"):
        _host(mig_mode=False, mig_slices=[one])
    with pytest.raises(ValidationError, match=r"mig_slices\[1\].uuid: duplicate"):
        _host(mig_slices=[one, one.model_copy(update={"gpu_instance_id": 2})])
    with pytest.raises(ValidationError, match=r"gpu_instance_id: duplicate"):
        _host(mig_slices=[one, one.model_copy(update={"uuid": "MIG-2"})])
    with pytest.raises(ValidationError, match="profile"):
        MigSliceFact(uuid="MIG-1", gpu_instance_id=1, profile="3g.40")
    with pytest.raises(ValidationError, match="mig_slices"):
        _host(mig_slices=[one.model_copy(update={"uuid": f"MIG-{i}", "gpu_instance_id": i}) for i in range(8)])
