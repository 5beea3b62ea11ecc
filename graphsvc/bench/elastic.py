"""Replay of elastic, checkpointing training jobs: what preemption costs, and whether resizes
keep their layout. Trace model (seeded, synthetic; documented in docs/benchmarks.md):

* Background training jobs arrive at random (exponential gaps, mean `gap_s`), each asks for
  4, 8 or 16 GPUs in one NVLink domain (`nvlink=full-mesh`), is preemptible at priority 0,
  runs an exponential time (mean `mean_run_s`) and checkpoints every 10, 30, 60 or 120
  minutes from its start; it reports its checkpoints with its renewals.
* A share of them (`elastic_share`) is elastic: at a random point of its run it grows to twice
  its size (a new phase), and later shrinks back. Grows are asked with `keepLayout: false`, so
  that they happen wherever GPUs are free near the job and the share that kept the layout
  (same NVLink domain, leaves and rails) is measured rather than enforced.
* Every `urgent_every_s` an urgent job arrives that needs a large block of one NVLink domain
  (`urgent_gpus`, priority 10, not preemptible) for two hours; it preempts at once
  (grace 0, so the two policies are compared on the same footing).
* A preempted job's work since its last checkpoint is lost, plus a restart (`RESTART_COST_S`
  per GPU); it leaves the trace (it would restart elsewhere later).

The same trace is replayed once per policy on a fresh graph: `checkpoint` (least lost work)
and `priority` (fewest victims, lowest priorities: the rule before checkpoint awareness).
The two runs diverge after their first different choice, so each run also asks, at every
urgent arrival, what both policies' plans would lose on that same state (`paired_*`).
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Any

from graphsvc.placement.request import parse_request
from graphsvc.reservations.checkpoints import RESTART_COST_S, Progress, lost_gpu_seconds
from graphsvc.reservations.elastic import elastic_for
from graphsvc.reservations.preemption import Pending
from graphsvc.reservations.resize import Resized
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway

WEEK = 7 * 24 * 3600


@dataclass(frozen=True)
class TraceJob:
    name: str
    arrive: float
    run_s: float
    gpus: int
    checkpoint_every_s: float
    urgent: bool = False
    grow_at: float | None = None  # seconds after its start
    shrink_at: float | None = None


@dataclass
class TraceParams:
    hours: float = 48.0
    gap_s: float = 900.0
    mean_run_s: float = 8 * 3600.0
    elastic_share: float = 0.4
    urgent_every_s: float = 3 * 3600.0
    urgent_gpus: int = 48
    seed: int = 18


def make_trace(p: TraceParams) -> list[TraceJob]:
    rng = random.Random(p.seed)
    jobs: list[TraceJob] = []
    t, n, horizon = 0.0, 0, p.hours * 3600
    while True:
        t += rng.expovariate(1 / p.gap_s)
        if t >= horizon:
            break
        run = max(1800.0, rng.expovariate(1 / p.mean_run_s))
        grow = shrink = None
        if rng.random() < p.elastic_share:
            grow = run * rng.uniform(0.1, 0.4)
            shrink = run * rng.uniform(0.6, 0.9)
        jobs.append(TraceJob(f"train-{n:04d}", t, run, rng.choice([4, 8, 16]),
                             rng.choice([600.0, 1800.0, 3600.0, 7200.0]), grow_at=grow, shrink_at=shrink))  # fmt: skip
        n += 1
    u = p.urgent_every_s
    while u < horizon:
        jobs.append(TraceJob(f"urgent-{int(u)}", u, 7200.0, p.urgent_gpus, 3600.0, urgent=True))
        u += p.urgent_every_s
    return sorted(jobs, key=lambda j: (j.arrive, j.name))


@dataclass
class ReplayResult:
    policy: str
    placed: int = 0
    rejected: int = 0
    urgent_placed: int = 0
    urgent_rejected: int = 0
    preemptions: int = 0
    victims: int = 0
    lost_gpu_hours: float = 0.0
    resizes: int = 0
    resizes_done: int = 0
    resizes_layout_kept: int = 0
    grows_done: int = 0
    grows_layout_kept: int = 0
    # paired: at every urgent arrival, both policies' plans on the same state (GPU-hours)
    paired_plans: int = 0
    paired_lost_checkpoint: float = 0.0
    paired_lost_priority: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        share = self.resizes_layout_kept / self.resizes_done if self.resizes_done else 0.0
        grow_share = self.grows_layout_kept / self.grows_done if self.grows_done else 0.0
        fields = {k: v for k, v in self.__dict__.items() if k != "notes"}
        for k in ("lost_gpu_hours", "paired_lost_checkpoint", "paired_lost_priority"):
            fields[k] = round(fields[k], 2)
        return {**fields, "layout_kept_share": round(share, 3), "grow_layout_kept_share": round(grow_share, 3)}


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def replay(gw: Gateway, trace: list[TraceJob], policy: str, *, model: str = "GB200") -> ReplayResult:
    """Replay `trace` on the cluster already loaded in `gw` (fresh: nothing reserved)."""
    clock = _Clock()
    base = clock.now
    svc = ReservationService(gw, clock=clock, max_ttl_s=WEEK)
    elastic = elastic_for(svc)
    out = ReplayResult(policy)
    events: list[tuple[float, int, str, TraceJob]] = []
    seq = 0
    for job in trace:
        heapq.heappush(events, (job.arrive, seq, "arrive", job))
        seq += 1
    live: dict[str, tuple[str, TraceJob, float]] = {}  # job name -> reservation id, job, start
    by_reservation: dict[str, str] = {}
    size: dict[str, int] = {}  # job name -> GPUs it holds now
    while events:
        at, _, kind, job = heapq.heappop(events)
        clock.now = base + at
        if kind == "arrive":
            request = parse_request(f"{job.gpus}x{model} nvlink=full-mesh")
            if job.urgent:
                plans = [await svc.preemption_plan(request, 10, policy=p) for p in ("checkpoint", "priority")]
                urgent = await elastic.preemption.preempt(
                    holder=job.name, request=request, priority=10, grace_s=0, ttl_s=WEEK, policy=policy
                )
                if isinstance(urgent, Pending):  # (grace 0 completes at once unless the GPUs were taken)
                    urgent = await svc.get(urgent.reservation.id) or urgent
                if not isinstance(urgent, Reservation) or urgent.state != "active":
                    out.urgent_rejected += 1
                    continue
                out.urgent_placed += 1
                ended = [r for r in await svc.get_many(ids=list(by_reservation)) if r.state == "preempted"]
                if ended:
                    out.preemptions += 1
                    if all(pl.feasible and pl.victims for pl in plans):  # counted only where it preempted
                        out.paired_plans += 1
                        out.paired_lost_checkpoint += plans[0].lost_gpu_seconds / 3600
                        out.paired_lost_priority += plans[1].lost_gpu_seconds / 3600
                for r in ended:
                    name = by_reservation.pop(r.id)
                    _, victim, start = live.pop(name)
                    progress = Progress(size.pop(name), start, start, victim.checkpoint_every_s)
                    out.lost_gpu_hours += lost_gpu_seconds(progress, clock.now, RESTART_COST_S) / 3600
                    out.victims += 1
            else:
                got = await svc.reserve(holder=job.name, request=request, ttl_s=WEEK, preemptible=True)
                if not isinstance(got, Reservation):
                    out.rejected += 1
                    continue
                out.placed += 1
                await elastic.preemption.renew(got.id, WEEK, last_checkpoint_at=clock.now,
                                               checkpoint_every_s=job.checkpoint_every_s)  # fmt: skip
                live[job.name] = (got.id, job, clock.now)
                size[job.name] = job.gpus
                by_reservation[got.id] = job.name
                if job.grow_at is not None and job.shrink_at is not None:
                    heapq.heappush(events, (at + job.grow_at, seq, "grow", job))
                    heapq.heappush(events, (at + job.shrink_at, seq + 1, "shrink", job))
                    seq += 2
            heapq.heappush(events, (at + job.run_s, seq, "end", job))
            seq += 1
        elif job.name in live or (job.urgent and kind == "end"):
            if kind == "end":
                rid = live.pop(job.name)[0] if job.name in live else None
                size.pop(job.name, None)
                if rid is None:
                    found = await svc.page(job.name, "active", 5, None)
                    rid = found[0].id if found else None
                if rid is not None:
                    by_reservation.pop(rid, None)
                    await svc.release(rid)
                continue
            rid = live[job.name][0]
            out.resizes += 1
            target = job.gpus * 2 if kind == "grow" else job.gpus
            # grows take the best GPUs near the job even where the layout breaks, so that the
            # share that kept it is measured (the service's default refuses those instead)
            done = await elastic.resize.resize(rid, gpus=target, keep_layout=False)
            if isinstance(done, Resized):
                size[job.name] = target
                out.resizes_done += 1
                out.resizes_layout_kept += int(done.layout_kept)
                if kind == "grow":
                    out.grows_done += 1
                    out.grows_layout_kept += int(done.layout_kept)
    return out
