"""Trace replay: the service's placement against count-only, Slurm-tree-like and Kueue-TAS-like
baselines, in simulated time, through the same GraphQL mutations launchers use.

Each job reserves at its start and releases at its end; jobs wait in a FIFO queue with
backfill (a job that does not fit lets later, smaller ones start). Baselines choose GPUs
from the topology they see; the service policy asks the
service's engine for ranked candidates (strict first: full-mesh NVLink, one leaf; then
relaxed) and reserves its first choice; the lookahead policy takes, of the same candidates,
the one that leaves the cluster best able to serve the queue's next jobs
(`graphsvc.bench.lookahead`). Only the service policies hold reservations in the graph.
The communication model and the metrics are in `graphsvc.bench.metrics`.
"""

from __future__ import annotations

import heapq
import math
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx

from graphsvc.bench.driver import Driver
from graphsvc.bench.lookahead import UPCOMING, pick
from graphsvc.bench.metrics import NIC_GBPS, NVLINK_GBPS, PCIE_GBPS, Placement, best_bandwidth, measure
from graphsvc.bench.policies import BASELINES, HostView, Topology
from graphsvc.bench.traces import Job, alibaba_jobs, llm_jobs

# Re-exported: other replays (graphsvc/bench/shaped.py) share the bandwidth model and traces.
__all__ = ["NIC_GBPS", "NVLINK_GBPS", "PCIE_GBPS", "Job", "JobResult", "Replay", "RunResult", "alibaba_jobs",
           "llm_jobs", "snapshot"]  # fmt: skip

SERVICE_POLICIES = ("service", "lookahead")


@dataclass
class JobResult:
    job: int
    gpus: int
    wait_s: float
    placement: Placement

    @property
    def bottleneck_gbps(self) -> float | None:
        return self.placement.bottleneck_gbps

    @property
    def hops(self) -> int:
        return self.placement.hops


@dataclass
class RunResult:
    policy: str
    jobs: list[JobResult] = field(default_factory=list)
    unplaced: int = 0
    utilization: float = 0.0
    largest_free_block_mean: float = 0.0
    decisions_per_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The run's metrics (None where no job qualifies); unrounded, the tables round."""
        multi = [j for j in self.jobs if j.gpus > 1]
        bws = [j.placement.bottleneck_gbps for j in multi if j.placement.bottleneck_gbps]
        slow = [s for j in multi if (s := j.placement.slowdown) is not None]
        waits = sorted(j.wait_s for j in self.jobs)

        def mean(xs: list[float]) -> float | None:
            return statistics.fmean(xs) if xs else None

        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "multi_gpu_jobs": len(multi),
            "unplaced": self.unplaced,
            "mean_bottleneck_gbps": mean(bws),
            "local_share": mean([float(j.placement.local) for j in multi]),
            "mean_comm_slowdown": mean(slow),
            "mean_ib_hops": mean([float(j.placement.hops) for j in multi]),
            "mean_domains_per_job": mean([float(j.placement.domains) for j in multi]),
            "mean_leaves_per_job": mean([float(j.placement.leaves) for j in multi]),
            "mean_queue_delay_s": mean(waits),
            "p95_queue_delay_s": waits[min(len(waits) - 1, int(0.95 * len(waits)))] if waits else None,
            "utilization": self.utilization,
            "largest_free_block_mean": self.largest_free_block_mean,
            "decisions_per_s": self.decisions_per_s,
        }


class Replay:
    """Drives one service (through a `Driver`) through one trace with one policy."""

    def __init__(self, driver: Driver, topology: Topology, models: dict[str, str]) -> None:
        self.driver = driver
        self.t = topology
        self.model_of = models  # GPU uuid -> model family (H100, GB200, ...)
        self.max_domain = max(topology.domain_size.values(), default=1)
        self.gpus_per_host = max((len(h.gpus) for h in topology.hosts.values()), default=1)

    def _requests(self, n: int) -> list[str]:
        if n == 1:
            return ["1"]
        if n <= self.max_domain:
            return [f"{n} nvlink=full-mesh", f"{n} ib-hops<=1", f"{n}"]
        per = self.gpus_per_host
        if n % per == 0:
            return [f"{n} per-host={per} ib-hops<=1", f"{n} per-host={per} ib-hops<=3", f"{n}"]
        return [f"{n} ib-hops<=1", f"{n}"]

    async def _start(self, policy: str, n: int, upcoming: list[int]) -> tuple[str, list[str]] | None:
        """The GPUs a policy takes and the reservation that holds them ('' for baselines)."""
        if policy in SERVICE_POLICIES:
            for text in self._requests(n):
                options = [o for o in await self.driver.candidates(text + " limit=5") if self.t.free.issuperset(o)]
                if not options:
                    continue
                chosen = options[pick(self.t, self.model_of, options, upcoming) if policy == "lookahead" else 0]
                rid = await self.driver.reserve(chosen)
                return (rid, chosen) if rid is not None else None
            return None
        # Baselines decide on the replay's own picture; they need no reservation in the graph.
        got = BASELINES[policy](self.t, n)
        return ("", got) if got else None

    def _largest_free_block(self) -> int:
        per: dict[str, int] = defaultdict(int)
        for u in self.t.free:
            per[self.t.domain_of[u] or self.t.host_of[u]] += 1
        return max(per.values(), default=0)

    async def run(self, policy: str, jobs: list[Job]) -> RunResult:
        result = RunResult(policy)
        all_gpus = set(self.t.host_of) - self.t.unavailable
        self.t.free = set(all_gpus)
        pending = sorted(jobs, key=lambda j: (j.arrival, j.id))
        queue: list[Job] = []
        running: list[tuple[float, int, str, list[str]]] = []
        clock, busy, blocks, decisions, wall = 0.0, 0.0, [], 0, 0.0
        # Utilization is measured in steady state: from the arrival of the first quarter's last
        # job (the warm-up) to the last arrival (after it the cluster only drains).
        window = (pending[len(pending) // 4].arrival, pending[-1].arrival) if pending else (0.0, 0.0)
        last = 0.0
        i = 0
        while i < len(pending) or queue or running:
            nxt = min(pending[i].arrival if i < len(pending) else math.inf, running[0][0] if running else math.inf)
            if nxt == math.inf:  # queued jobs that can never fit
                result.unplaced += len(queue)
                break
            overlap = min(nxt, window[1]) - max(last, window[0])
            if overlap > 0:
                busy += (len(all_gpus) - len(self.t.free)) * overlap
            clock = last = nxt
            while running and running[0][0] <= clock:
                _, _, rid, gpus = heapq.heappop(running)
                if rid:
                    await self.driver.release(rid)
                self.t.free.update(gpus)
            while i < len(pending) and pending[i].arrival <= clock:
                if pending[i].gpus > len(all_gpus):
                    result.unplaced += 1
                else:
                    queue.append(pending[i])
                i += 1
            for k, job in enumerate(list(queue)):  # FIFO with backfill
                if job.gpus > len(self.t.free):
                    continue
                later = [j.gpus for j in queue[k + 1 :]] + [j.gpus for j in pending[i : i + UPCOMING]]
                best = best_bandwidth(self.t, self.model_of, job.gpus)  # the cluster at this moment
                started = time.perf_counter()
                got = await self._start(policy, job.gpus, later[:UPCOMING])
                wall += time.perf_counter() - started
                decisions += 1
                if got is None:
                    continue
                rid, gpus = got
                placement = measure(self.t, self.model_of, gpus, best)
                self.t.free.difference_update(gpus)
                queue.remove(job)
                heapq.heappush(running, (clock + job.duration, job.id, rid, gpus))
                result.jobs.append(JobResult(job.id, job.gpus, clock - job.arrival, placement))
            blocks.append(self._largest_free_block())
        span = window[1] - window[0]
        result.utilization = busy / (len(all_gpus) * span) if span > 0 else 0.0
        result.largest_free_block_mean = statistics.fmean(blocks) if blocks else 0.0
        result.decisions_per_s = decisions / wall if wall else 0.0
        return result


HOSTS_Q = """query($after: String) { hosts(first: 500, after: $after) { nodes { name rack scalableUnit }
  pageInfo { hasNextPage endCursor } } }"""
GPUS_Q = """query($after: String) { gpus(first: 500, after: $after) {
  nodes { uuid index model nvlinkDomain health host { name } }
  pageInfo { hasNextPage endCursor } } }"""


async def _pages(client: httpx.AsyncClient, field_name: str, query: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = None
    while True:
        data = (await client.post("/graphql", json={"query": query, "variables": {"after": after}})).json()["data"]
        out.extend(data[field_name]["nodes"])
        if not data[field_name]["pageInfo"]["hasNextPage"]:
            return out
        after = data[field_name]["pageInfo"]["endCursor"]


async def snapshot(client: httpx.AsyncClient) -> tuple[Topology, dict[str, str]]:
    """What a scheduler can learn from the service: hosts, GPUs, NVLink domains, leaves, pods."""
    hosts = await _pages(client, "hosts", HOSTS_Q)
    gpus = await _pages(client, "gpus", GPUS_Q)
    fabric = (
        await client.post(
            "/graphql", json={"query": "{ fabric(first: 500) { switches { name tier uplinks { to } } } }"}
        )
    ).json()
    spines_of = {
        s["name"]: {u["to"] for u in s["uplinks"]} for s in fabric["data"]["fabric"]["switches"] if s["tier"] == "leaf"
    }
    leaves_of: dict[str, frozenset[str]] = {}
    for h in hosts:
        q = "query($n: String!) { host(name: $n) { nics { leaf } } }"
        detail = (await client.post("/graphql", json={"query": q, "variables": {"n": h["name"]}})).json()["data"][
            "host"
        ]
        leaves_of[h["name"]] = frozenset(n["leaf"] for n in detail["nics"] if n["leaf"])
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in gpus:
        by_host[g["host"]["name"]].append(g)
    views = {}
    for h in hosts:
        spines = sorted(set().union(*(spines_of.get(leaf, set()) for leaf in leaves_of[h["name"]])))
        members = sorted(by_host[h["name"]], key=lambda g: g["index"])
        views[h["name"]] = HostView(
            name=h["name"],
            rack=h["rack"] or h["name"],
            leaves=leaves_of[h["name"]],
            pod=spines[0] if spines else h["name"],
            gpus=[(g["uuid"], g["nvlinkDomain"]) for g in members],
        )
    families = ("GB200", "H100", "H200", "B200", "A100", "V100", "L40S")
    models = {g["uuid"]: next((f for f in families if f in g["model"]), g["model"]) for g in gpus}
    topology = Topology(views)
    # Unhealthy GPUs are unallocatable for every policy (a device plugin would hide them too).
    topology.unavailable = {g["uuid"] for g in gpus if g.get("health") in ("failed", "degraded")}
    return topology, models
