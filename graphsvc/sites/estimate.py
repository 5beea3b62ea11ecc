"""Estimates from a job profile and a placement: run time, cost, energy, carbon, data transfer.

Pure functions over numbers, each small enough to check by hand (tests/unit/test_site_estimates.py).

Run time. The profile says how many GPU-hours the job takes at full speed (W, measured on the
reference model with the reference per-GPU bandwidth B_ref) and which share c of step time is
communication there. On N GPUs of relative speed s whose placement's bottleneck is B GB/s per
GPU, compute shrinks with s and communication grows with B_ref / B:

    hours = W / N * ((1 - c) / s + c * B_ref / B)

A single GPU has no peer: its communication term is zero. Spot capacity adds the work lost
to preemptions: at rate r per hour, each losing half a checkpoint interval k on average,
hours_spot = hours * (1 + r * k / 2).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobProfile:
    """What the caller knows about the job (docs/sites.md)."""

    gpu_hours: float  # W: GPU-hours at full speed on the reference model and bandwidth
    comm_share: float = 0.0  # c: share of step time that is communication at the reference bandwidth
    reference_model: str | None = None  # the model W was measured on (None: speeds are not compared)
    reference_gbps: float = 50.0  # B_ref: per-GPU GB/s c was measured at (one 400 Gb/s NIC per GPU)
    dataset_gb: float = 0.0
    data_site: str | None = None  # where the dataset lives (a site name)
    checkpoint_interval_h: float = 1.0  # k, for spot capacity

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) for every value that cannot describe a job."""
        out = []
        if not 0 < self.gpu_hours <= 1e9:
            out.append(("gpuHours", "must be above 0 and at most 1e9"))
        if not 0 <= self.comm_share < 1:
            out.append(("commShare", "must be at least 0 and below 1"))
        if not 0 < self.reference_gbps <= 1e5:
            out.append(("referenceGbps", "must be above 0 and at most 1e5"))
        if not 0 <= self.dataset_gb <= 1e12:
            out.append(("datasetGB", "must be between 0 and 1e12"))
        if self.dataset_gb > 0 and not self.data_site:
            out.append(("dataSite", "a dataset needs the site where it lives"))
        if not 0 < self.checkpoint_interval_h <= 1e4:
            out.append(("checkpointIntervalHours", "must be above 0 and at most 1e4"))
        return out


def run_hours(profile: JobProfile, gpus: int, bottleneck_gbps: float | None, speed: float) -> float:
    """Wall-clock hours on `gpus` GPUs of relative `speed` whose slowest path is `bottleneck_gbps` GB/s."""
    compute = (1.0 - profile.comm_share) / speed
    comm = 0.0
    if gpus > 1 and bottleneck_gbps is not None:
        comm = profile.comm_share * profile.reference_gbps / bottleneck_gbps
    return profile.gpu_hours / gpus * (compute + comm)


def spot_hours(hours: float, preemption_per_h: float, checkpoint_interval_h: float) -> float:
    """Expected hours on preemptible capacity: each preemption loses half a checkpoint interval."""
    return hours * (1.0 + preemption_per_h * checkpoint_interval_h / 2.0)


def compute_cost(hours: float, gpus: int, usd_per_gpu_hour: float) -> float:
    return hours * gpus * usd_per_gpu_hour


def energy_kwh(hours: float, gpus: int, watts_per_gpu: float, pue: float) -> float:
    """Facility energy: the GPUs' draw times the site's PUE (CPUs, network and cooling included in PUE)."""
    return gpus * watts_per_gpu * hours / 1000.0 * pue


def carbon_kg(kwh: float, grams_per_kwh: float) -> float:
    return kwh * grams_per_kwh / 1000.0


def transfer_hours(dataset_gb: float, link_gbps: float) -> float:
    """Hours to move the dataset over a link of `link_gbps` GB/s (latency is negligible at this size)."""
    return dataset_gb / link_gbps / 3600.0


def transfer_cost(dataset_gb: float, egress_usd_per_gb: float) -> float:
    return dataset_gb * egress_usd_per_gb
