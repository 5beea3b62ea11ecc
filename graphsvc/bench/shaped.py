"""Shaped-job replay: TP/PP/DP jobs from public training configs, the service against baselines.

Trace model (seeded, documented in docs/benchmarks.md): job shapes are drawn from the table
below, each a configuration published for a real training or fine-tuning run, scaled down in
data-parallel width (the TP and PP sizes are kept: they are what the topology must honour) to
fit the replayed cluster; arrivals are Poisson at a rate that offers the cluster `load` of its
GPU-hours; durations are log-normal around an hour.

Every policy places the same jobs in simulated time, FIFO with backfill, through the service's
GraphQL API (reserve by GPU uuid, release at the end). The service asks `shapedPlacement`
with preferred levels (TP groups in one NVLink domain, the job in one leaf: never stricter than
the baselines, so it never waits for a tighter fit); the baselines pick `tp*pp*dp` GPUs as they
would for a plain count and their ranks follow the order they return (TP groups = consecutive
runs of tp GPUs, as launchers number them). Measured per job, with the replay's
communication model (graphsvc.bench.replay): the share of TP groups inside one NVLink domain,
the TP bottleneck (worst pair inside any TP group), the DP bottleneck (worst link of any DP
ring), queue delay; per run, utilisation.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from dataclasses import dataclass, field
from typing import Any

import httpx

from graphsvc.bench.policies import BASELINES, Topology
from graphsvc.bench.replay import NIC_GBPS, NVLINK_GBPS, PCIE_GBPS


@dataclass(frozen=True)
class Config:
    name: str
    tp: int
    pp: int
    dp: int
    source: str


# (TP, PP) as published; DP scaled to the replayed cluster (the published DP is in `source`).
CONFIGS: tuple[Config, ...] = (
    Config("7B fine-tune", 1, 1, 8, "Touvron et al. 2023 (Llama 2): 7B models fine-tuned data-parallel"),
    Config("GPT-NeoX-20B", 2, 4, 4, "Black et al. 2022 (GPT-NeoX-20B): TP=2, PP=4 on 96 A100 (DP=12)"),
    Config("13B-class", 2, 1, 6, "Shoeybi et al. 2019 (Megatron-LM): 2- to 8-way TP inside one node"),
    Config("BLOOM-176B", 4, 12, 2, "BigScience 2022 (BLOOM): TP=4, PP=12, DP=8 on 384 A100"),
    Config("GPT-3-class 175B", 8, 8, 2, "Narayanan et al. SC'21 (Megatron-LM): TP=8 in a node, PP across nodes"),
    Config("Llama-3-405B", 8, 16, 1, "Dubey et al. 2024 (Llama 3): TP=8, PP=16, DP up to 128"),
    Config("70B fine-tune", 8, 1, 2, "common recipe for 70B models: TP=8 inside one 8-GPU node"),
    Config("TP=4 replicas", 4, 1, 3, "Megatron-LM/vLLM: 4-way TP replicas of a mid-size model"),
)


@dataclass
class ShapedJob:
    id: int
    arrival: float
    duration: float
    config: Config

    @property
    def gpus(self) -> int:
        return self.config.tp * self.config.pp * self.config.dp


def shaped_jobs(count: int, seed: int, cluster_gpus: int, load: float) -> list[ShapedJob]:
    """Seeded jobs whose offered GPU-hours are `load` of the cluster's over the arrival span."""
    rng = random.Random(seed)
    fitting = [c for c in CONFIGS if c.tp * c.pp * c.dp <= cluster_gpus // 2]
    durations = [rng.lognormvariate(math.log(3600), 0.8) for _ in range(count)]
    configs = [rng.choice(fitting) for _ in range(count)]
    mean_work = statistics.fmean(d * (c.tp * c.pp * c.dp) for d, c in zip(durations, configs, strict=True))
    rate = load * cluster_gpus / mean_work  # arrivals per second for the offered load
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.expovariate(rate)
        jobs.append(ShapedJob(i, t, durations[i], configs[i]))
    return jobs


@dataclass
class ShapedJobResult:
    job: int
    gpus: int
    wait_s: float
    tp_groups: int
    tp_in_domain: int
    tp_gbps: float | None
    dp_gbps: float | None


@dataclass
class ShapedRun:
    policy: str
    jobs: list[ShapedJobResult] = field(default_factory=list)
    utilization: float = 0.0
    unplaced: int = 0

    def summary(self) -> dict[str, Any]:
        groups = sum(j.tp_groups for j in self.jobs)
        tp = [j.tp_gbps for j in self.jobs if j.tp_gbps is not None]
        dp = [j.dp_gbps for j in self.jobs if j.dp_gbps is not None]
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "unplaced": self.unplaced,
            "tp_in_domain_share": round(sum(j.tp_in_domain for j in self.jobs) / groups, 4) if groups else None,
            "mean_tp_gbps": round(statistics.fmean(tp), 1) if tp else None,
            "mean_dp_gbps": round(statistics.fmean(dp), 1) if dp else None,
            "mean_queue_delay_s": round(statistics.fmean(j.wait_s for j in self.jobs), 1) if self.jobs else None,
            "utilization": round(self.utilization, 4),
        }


def pair_gbps(t: Topology, models: dict[str, str], a: str, b: str) -> float:
    """The replay's communication model for one pair of GPUs."""
    da, db = t.domain_of.get(a), t.domain_of.get(b)
    if da is not None and da == db:
        return NVLINK_GBPS.get(models.get(a, ""), PCIE_GBPS)
    if t.host_of[a] == t.host_of[b]:
        return PCIE_GBPS
    return NIC_GBPS


def measure(
    t: Topology, models: dict[str, str], c: Config, ranks: list[str]
) -> tuple[int, int, float | None, float | None]:
    """TP groups, how many sit in one NVLink domain, TP and DP bottlenecks, for GPUs in rank order."""
    tp, pp, dp = c.tp, c.pp, c.dp

    def at(tp_rank: int, dp_rank: int, pp_rank: int) -> str:
        return ranks[tp_rank + tp * (dp_rank + dp * pp_rank)]

    groups = inside = 0
    tp_worst: float | None = None
    dp_worst: float | None = None
    for j in range(pp):
        for i in range(dp):
            members = [at(k, i, j) for k in range(tp)]
            doms = {t.domain_of.get(u) for u in members}
            groups += 1
            inside += int(len(doms) == 1 and None not in doms)
            for x in range(tp):
                for y in range(x + 1, tp):
                    bw = pair_gbps(t, models, members[x], members[y])
                    tp_worst = bw if tp_worst is None else min(tp_worst, bw)
        if dp > 1:
            for k in range(tp):
                ring = [at(k, i, j) for i in range(dp)]
                for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
                    bw = pair_gbps(t, models, a, b)
                    dp_worst = bw if dp_worst is None else min(dp_worst, bw)
    return groups, inside, tp_worst, dp_worst


SHAPED_Q = """query($text: String!) { shapedPlacement(text: $text) { ranks { gpuUuid } infeasible { message } } }"""
RESERVE_Q = """mutation($input: ReserveInput!) { reserve(input: $input) { __typename ... on Reservation { id } } }"""
RELEASE_Q = "mutation($id: String!) { release(id: $id) { __typename } }"


class ShapedReplay:
    def __init__(self, client: httpx.AsyncClient, topology: Topology, models: dict[str, str]) -> None:
        self.client = client
        self.t = topology
        self.models = models
        self.decisions = 0

    async def _gql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        body = (await self.client.post("/graphql", json={"query": query, "variables": variables})).json()
        if body.get("errors"):
            raise RuntimeError(body["errors"][0]["message"])
        data: dict[str, Any] = body["data"]
        return data

    async def _choose(self, policy: str, c: Config) -> list[str] | None:
        self.decisions += 1
        n = c.tp * c.pp * c.dp
        if policy != "service":
            return BASELINES[policy](self.t, n)
        text = f"tp={c.tp} pp={c.pp} dp={c.dp} group-in=nvlink-domain:preferred job-in=leaf:preferred"
        out = (await self._gql(SHAPED_Q, {"text": text}))["shapedPlacement"]
        return [r["gpuUuid"] for r in out["ranks"]] or None

    async def _reserve(self, gpus: list[str]) -> str | None:
        payload = {"holder": "shaped-replay", "ttlSeconds": 7 * 86400, "gpus": gpus}
        out = (await self._gql(RESERVE_Q, {"input": payload}))["reserve"]
        return str(out["id"]) if out["__typename"] == "Reservation" else None

    async def run(self, policy: str, jobs: list[ShapedJob]) -> ShapedRun:
        result = ShapedRun(policy)
        all_gpus = set(self.t.host_of) - self.t.unavailable
        self.t.free = set(all_gpus)
        pending = sorted(jobs, key=lambda j: (j.arrival, j.id))
        queue: list[ShapedJob] = []
        running: list[tuple[float, int, str, list[str]]] = []
        busy = last = clock = 0.0
        i = 0
        while i < len(pending) or queue or running:
            nxt = min(pending[i].arrival if i < len(pending) else math.inf, running[0][0] if running else math.inf)
            if nxt == math.inf:
                result.unplaced += len(queue)
                break
            busy += (len(all_gpus) - len(self.t.free)) * (nxt - last)
            clock = last = nxt
            while running and running[0][0] <= clock:
                _, _, rid, gpus = heapq.heappop(running)
                await self._gql(RELEASE_Q, {"id": rid})
                self.t.free.update(gpus)
            while i < len(pending) and pending[i].arrival <= clock:
                queue.append(pending[i])
                i += 1
            for job in list(queue):  # FIFO with backfill
                if job.gpus > len(self.t.free):
                    continue
                chosen = await self._choose(policy, job.config)
                if not chosen:
                    continue
                reservation = await self._reserve(chosen)
                if reservation is None:
                    continue
                self.t.free.difference_update(chosen)
                queue.remove(job)
                heapq.heappush(running, (clock + job.duration, job.id, reservation, chosen))
                groups, inside, tp_bw, dp_bw = measure(self.t, self.models, job.config, chosen)
                result.jobs.append(ShapedJobResult(job.id, job.gpus, clock - job.arrival, groups, inside, tp_bw, dp_bw))
        result.utilization = busy / (len(all_gpus) * clock) if clock else 0.0
        return result
