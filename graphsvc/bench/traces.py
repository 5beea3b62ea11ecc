"""Job traces for the replay: the real Alibaba openb pods, an LLM-like trace, and shaped traces.

Shaped traces put real multi-GPU pressure on a cluster. Public GPU-cluster studies agree on
the shape: most jobs ask for one GPU, yet a minority of multi-GPU jobs takes most of the
GPU time (Microsoft Philly: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters
for DNN Training Workloads", USENIX ATC 2019; Alibaba PAI: Weng et al., "MLaaS in the Wild",
NSDI 2022; SenseTime Helios: Hu et al., "Characterization and Prediction of Deep Learning
Workloads in Large-Scale GPU Datacenters", SC 2021; Shanghai AI Lab Seren/Kalos: Hu et al.,
"Characterization of Large Language Model Development in the Datacenter", NSDI 2024). The
AcmeTrace summary (shared/data/traces/acme-cluster-summary.csv, CC-BY-4.0) gives a median of
1 GPU per job on all five clusters, means of 1.9 (Philly), 3.7 (Helios), 5.7 (Seren) and
26.8 (Kalos) GPUs, and jobs up to 128-2,048 GPUs.

`shaped_jobs` draws a seeded trace with a chosen share of GPU-hours in 8-512 GPU jobs
(30-70%: between the GPU-count-dominated Philly and the LLM-era Kalos) at a chosen offered
load (GPU-hours asked per GPU-hour of cluster capacity): small jobs of 1, 2 or 4 GPUs
(0.6/0.25/0.15), large jobs of 8-512 GPUs weighted 1/size (capped at half the cluster),
log-normal durations (median 1 h, sigma 1), Poisson arrivals at the rate that gives the load.
The cluster starts in steady state (jobs already running at t=0 up to the offered load,
with a uniform share of their duration left), so a short trace measures a loaded cluster.
`trace_stats` reports what a drawn trace actually holds.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from pathlib import Path

SMALL_SIZES = (1, 2, 4)
SMALL_WEIGHTS = (0.6, 0.25, 0.15)
LARGE_SIZES = (8, 16, 32, 64, 128, 256, 512)
DURATION_MEDIAN_S = 3600.0
DURATION_SIGMA = 1.0


@dataclass
class Job:
    id: int
    arrival: float
    duration: float
    gpus: int
    prefill: bool = False  # part of the load the cluster starts with (shaped traces)


def alibaba_jobs(path: Path, limit: int, window: int = 0) -> list[Job]:
    """GPU pods of the Alibaba openb trace, the `window`-th run of `limit` pods (time from its first).

    GPU counts as recorded, fractional GPUs rounded up to one; windows do not overlap, so
    each seed of a replay sees different real pods.
    """
    pods: list[tuple[float, float, int]] = []
    with path.open() as fh:
        for row in csv.DictReader(fh):
            gpus = int(row["num_gpu"] or 0)
            start, end = float(row["creation_time"]), float(row["deletion_time"] or 0)
            if gpus == 0 or end <= start:
                continue
            pods.append((start, end, gpus))
    pods.sort()
    chosen = pods[window * limit : (window + 1) * limit]
    if not chosen:
        return []
    t0 = chosen[0][0]
    return [Job(i, start - t0, end - start, max(1, gpus)) for i, (start, end, gpus) in enumerate(chosen)]


def llm_jobs(count: int, seed: int, max_gpus: int) -> list[Job]:
    """Training jobs sized like LLM work: 8 to 1,024 GPUs, heavy tail, Poisson arrivals."""
    rng = random.Random(seed)
    sizes = [s for s in (8, 16, 32, 64, 128, 256, 512, 1024) if s <= max_gpus] or [max_gpus]
    weights = [1 / s**0.7 for s in sizes]
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.expovariate(1 / 600)
        jobs.append(Job(i, t, rng.lognormvariate(math.log(3600), 1.0), rng.choices(sizes, weights)[0]))
    return jobs


def _mean(sizes: tuple[int, ...] | list[int], weights: tuple[float, ...] | list[float]) -> float:
    return sum(s * w for s, w in zip(sizes, weights, strict=True)) / sum(weights)


def shaped_jobs(count: int, seed: int, cluster_gpus: int, load: float, large_share: float) -> list[Job]:
    """A seeded trace with `large_share` of its GPU-hours in 8-512 GPU jobs at offered `load`."""
    if not 0 < large_share < 1 or load <= 0:
        raise ValueError("large_share must be in (0, 1) and load positive")
    rng = random.Random(seed)
    large = [s for s in LARGE_SIZES if s <= max(8, cluster_gpus // 2)]
    large_weights = [1 / s for s in large]
    small_mean, large_mean = _mean(SMALL_SIZES, SMALL_WEIGHTS), _mean(large, large_weights)
    # P(large) so that large jobs hold `large_share` of the expected GPU-hours (same durations).
    p_large = large_share * small_mean / (large_share * small_mean + (1 - large_share) * large_mean)
    mean_duration = DURATION_MEDIAN_S * math.exp(DURATION_SIGMA**2 / 2)
    gpu_seconds_per_job = (p_large * large_mean + (1 - p_large) * small_mean) * mean_duration
    rate = load * cluster_gpus / gpu_seconds_per_job  # arrivals per second

    def size() -> int:
        return (
            rng.choices(large, large_weights)[0]
            if rng.random() < p_large
            else rng.choices(SMALL_SIZES, SMALL_WEIGHTS)[0]
        )

    def duration() -> float:
        return rng.lognormvariate(math.log(DURATION_MEDIAN_S), DURATION_SIGMA)

    # Start in steady state: jobs already running at t=0 up to the offered load, each with a
    # uniformly drawn share of its duration left; a short trace then measures a loaded
    # cluster instead of its ramp-up.
    jobs: list[Job] = []
    held = 0
    while len(jobs) < count * 0.6:
        gpus = size()
        if held + gpus > load * cluster_gpus:
            break
        held += gpus
        jobs.append(Job(len(jobs), 0.0, duration() * rng.random(), gpus, prefill=True))
    t = 0.0
    while len(jobs) < count:
        t += rng.expovariate(rate)
        jobs.append(Job(len(jobs), t, duration(), size()))
    return jobs


@dataclass(frozen=True)
class TraceStats:
    jobs: int
    prefill: int  # jobs running at t=0 (shaped traces start in steady state)
    large_gpu_hour_share: float  # share of GPU-hours in 8-512 GPU jobs
    offered_load: float  # GPU-hours asked / (cluster GPUs x arrival span)
    multi_gpu_jobs: int


def trace_stats(jobs: list[Job], cluster_gpus: int) -> TraceStats:
    """What the arriving jobs (not the prefill) hold: share of GPU-hours in large jobs, offered load."""
    prefill = sum(1 for j in jobs if j.prefill)
    jobs = [j for j in jobs if not j.prefill]
    gpu_s = sum(j.gpus * j.duration for j in jobs)
    large = sum(j.gpus * j.duration for j in jobs if 8 <= j.gpus <= 512)
    span = max((j.arrival for j in jobs), default=0.0) - min((j.arrival for j in jobs), default=0.0)
    return TraceStats(
        jobs=len(jobs) + prefill,
        prefill=prefill,
        large_gpu_hour_share=large / gpu_s if gpu_s else 0.0,
        offered_load=gpu_s / (cluster_gpus * span) if span and cluster_gpus else 0.0,
        multi_gpu_jobs=sum(1 for j in jobs if j.gpus > 1),
    )
