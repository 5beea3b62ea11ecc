"""Trace replay: the service's placement against count-only, Slurm-tree-like and Kueue-TAS-like
baselines, in simulated time, through the same GraphQL mutations launchers use.

Each job reserves at its start and releases at its end; jobs wait in a FIFO queue with
backfill (a job that does not fit lets later, smaller ones start). Baselines choose GPUs
from the topology they see and reserve them by uuid; the service policy asks `reserve`
with a placement request (strict first: full-mesh NVLink, one leaf; then relaxed).

Communication model (stated in docs/benchmarks.md): a ring all-reduce of S bytes on n GPUs
takes 2(n-1)/n * S / B, B the bottleneck bandwidth between consecutive ranks, so a job's
communication slowdown is B_best / B, B_best the best bandwidth any placement of that size
could have on that cluster. Bandwidths (GB/s per GPU, from shared/docs/domain.md): NVLink
H100 900, GB200 1800, A100 bridged pair 600; PCIe between GPUs of a host 32; across hosts
one 400 Gb/s NIC per GPU, ~50.
"""

from __future__ import annotations

import csv
import heapq
import math
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from graphsvc.bench.policies import BASELINES, HostView, Topology
from graphsvc.client import RESERVE_MUTATION, request_input

NVLINK_GBPS = {"H100": 900.0, "H200": 900.0, "GB200": 1800.0, "B200": 1800.0, "A100": 600.0, "V100": 300.0}
PCIE_GBPS = 32.0
NIC_GBPS = 50.0


@dataclass
class Job:
    id: int
    arrival: float
    duration: float
    gpus: int


def alibaba_jobs(path: Path, limit: int) -> list[Job]:
    """GPU pods of the Alibaba openb trace: GPU counts as recorded, fractional GPUs rounded up."""
    jobs: list[Job] = []
    with path.open() as fh:
        for row in csv.DictReader(fh):
            gpus = int(row["num_gpu"] or 0)
            if gpus == 0:
                continue
            start, end = float(row["creation_time"]), float(row["deletion_time"] or 0)
            if end <= start:
                continue
            jobs.append(Job(len(jobs), start, end - start, max(1, gpus)))
            if len(jobs) >= limit:
                break
    return jobs


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


@dataclass
class JobResult:
    job: int
    gpus: int
    wait_s: float
    bottleneck_gbps: float | None
    best_gbps: float | None
    hops: int
    domains: int
    leaves: int
    local: bool


@dataclass
class RunResult:
    policy: str
    jobs: list[JobResult] = field(default_factory=list)
    unplaced: int = 0
    utilization: float = 0.0
    largest_free_block_mean: float = 0.0
    decisions_per_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        multi = [j for j in self.jobs if j.gpus > 1]
        bws = [j.bottleneck_gbps for j in multi if j.bottleneck_gbps]
        slow = [j.best_gbps / j.bottleneck_gbps for j in multi if j.bottleneck_gbps and j.best_gbps]
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "unplaced": self.unplaced,
            "mean_bottleneck_gbps": round(statistics.fmean(bws), 1) if bws else None,
            "local_share": round(sum(j.local for j in multi) / len(multi), 3) if multi else None,
            "mean_comm_slowdown": round(statistics.fmean(slow), 2) if slow else None,
            "mean_ib_hops": round(statistics.fmean(j.hops for j in multi), 2) if multi else None,
            "mean_domains_per_job": round(statistics.fmean(j.domains for j in multi), 2) if multi else None,
            "mean_leaves_per_job": round(statistics.fmean(j.leaves for j in multi), 2) if multi else None,
            "mean_queue_delay_s": round(statistics.fmean(j.wait_s for j in self.jobs), 1) if self.jobs else None,
            "utilization": round(self.utilization, 3),
            "largest_free_block_mean": round(self.largest_free_block_mean, 1),
            "decisions_per_s": round(self.decisions_per_s, 1),
        }


class Replay:
    """Drives one service (an httpx client on its base URL) through one trace with one policy."""

    def __init__(self, client: httpx.AsyncClient, topology: Topology, models: dict[str, str]) -> None:
        self.client = client
        self.t = topology
        self.model_of = models  # GPU uuid -> model family (H100, GB200, ...)
        self.max_domain = max(topology.domain_size.values(), default=1)
        self.gpus_per_host = max((len(h.gpus) for h in topology.hosts.values()), default=1)

    async def _gql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        resp = await self.client.post("/graphql", json={"query": query, "variables": variables})
        body = resp.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"][0]["message"])
        data: dict[str, Any] = body["data"]
        return data

    async def _reserve(self, payload: dict[str, Any]) -> tuple[str, list[str]] | None:
        out = (await self._gql(RESERVE_MUTATION, {"input": {"holder": "replay", "ttlSeconds": 7 * 86400, **payload}}))[
            "reserve"
        ]
        if out["__typename"] != "Reservation":
            return None
        return out["id"], [g["uuid"] for g in out["gpus"]]

    def _requests(self, n: int) -> list[str]:
        if n == 1:
            return ["1"]
        if n <= self.max_domain:
            return [f"{n} nvlink=full-mesh", f"{n} ib-hops<=1", f"{n}"]
        per = self.gpus_per_host
        if n % per == 0:
            return [f"{n} per-host={per} ib-hops<=1", f"{n} per-host={per} ib-hops<=3", f"{n}"]
        return [f"{n} ib-hops<=1", f"{n}"]

    async def _start(self, policy: str, n: int) -> tuple[str, list[str]] | None:
        if policy == "service":
            for text in self._requests(n):
                got = await self._reserve({"request": request_input(text + " limit=5")})
                if got is not None:
                    return got
            return None
        chosen = BASELINES[policy](self.t, n)
        return await self._reserve({"gpus": chosen}) if chosen else None

    def _measure(self, gpus: list[str]) -> tuple[float | None, float | None, int, int, int, bool]:
        hosts = {self.t.host_of[g] for g in gpus}
        domains = {self.t.domain_of[g] for g in gpus}
        model = self.model_of[gpus[0]]
        nv = NVLINK_GBPS.get(model)
        one_domain = len(domains) == 1 and None not in domains
        if len(gpus) == 1:
            bw: float | None = None
        elif one_domain and nv:
            bw = nv
        elif len(hosts) == 1:
            bw = PCIE_GBPS
        else:
            bw = NIC_GBPS
        fits_domain = len(gpus) <= self.max_domain
        best = (nv or PCIE_GBPS) if fits_domain and nv else (PCIE_GBPS if len(gpus) <= self.gpus_per_host else NIC_GBPS)
        host_list = [self.t.hosts[h] for h in hosts]
        hops = 0
        for i, a in enumerate(host_list):
            for b in host_list[i + 1 :]:
                hops = max(hops, 1 if a.leaves & b.leaves else (3 if a.pod == b.pod else 5))
        groups = {h.group for h in host_list}
        local = one_domain or (not fits_domain and len(groups) == 1)
        return bw, best if len(gpus) > 1 else None, hops, len(domains - {None}) or 1, len(groups), local

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
        last = 0.0
        i = 0
        while i < len(pending) or queue or running:
            nxt = min(pending[i].arrival if i < len(pending) else math.inf, running[0][0] if running else math.inf)
            if nxt == math.inf:  # queued jobs that can never fit
                result.unplaced += len(queue)
                break
            busy += (len(all_gpus) - len(self.t.free)) * (nxt - last)
            clock = last = nxt
            while running and running[0][0] <= clock:
                _, _, rid, gpus = heapq.heappop(running)
                await self._gql("mutation($id: String!) { release(id: $id) { __typename } }", {"id": rid})
                self.t.free.update(gpus)
            while i < len(pending) and pending[i].arrival <= clock:
                if pending[i].gpus > len(all_gpus):
                    result.unplaced += 1
                else:
                    queue.append(pending[i])
                i += 1
            for job in list(queue):  # FIFO with backfill
                if job.gpus > len(self.t.free):
                    continue
                started = time.perf_counter()
                got = await self._start(policy, job.gpus)
                wall += time.perf_counter() - started
                decisions += 1
                if got is None:
                    continue
                rid, gpus = got
                self.t.free.difference_update(gpus)
                queue.remove(job)
                heapq.heappush(running, (clock + job.duration, job.id, rid, gpus))
                bw, best, hops, doms, leaves, local = self._measure(gpus)
                result.jobs.append(
                    JobResult(job.id, job.gpus, clock - job.arrival, bw, best, hops, doms, leaves, local)
                )
            blocks.append(self._largest_free_block())
        result.utilization = busy / (len(all_gpus) * clock) if clock else 0.0
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
