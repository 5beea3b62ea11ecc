"""Shaped placement over GraphQL: the domain types themselves, wrapped by strawberry.

`shapedPlacement(text:)` answers a job given as TP/PP/DP groups with the groups, the tier
each got, the rank map, per-level bottleneck bandwidth and the launch files.
"""

from __future__ import annotations

import strawberry

from graphsvc.api.graphql.context import READERS, Info
from graphsvc.api.graphql.types import InfeasibleReason
from graphsvc.placement import rank_layout, shape
from graphsvc.placement.request import RequestError
from graphsvc.placement.shaped_service import place_shaped

Tier = strawberry.enum(shape.Tier, description="Topology tiers, tightest first.")
Level = strawberry.type(shape.Level, description="Where a set of GPUs must (required) or should (preferred) sit.")
JobShape = strawberry.type(
    shape.JobShape, description="A job as tensor-parallel groups: tp GPUs per group, pp*dp groups."
)
RankSlot = strawberry.type(shape.RankSlot, description="One rank: its GPU and its (tp, pp, dp) coordinates.")
GroupPlacement = strawberry.type(shape.GroupPlacement, description="One TP group and the tier it actually got.")
LevelBandwidth = strawberry.type(
    shape.LevelBandwidth, description="The worst link a level's collective crosses, GB/s one direction."
)
HostLaunch = strawberry.type(rank_layout.HostLaunch, description="What one host runs under torchrun or mpirun.")


@strawberry.type(description="Launch files for the rank map.")
class LaunchPlan:
    hostfile: str
    hosts: list[HostLaunch]  # type: ignore[valid-type]
    rankfile: str = strawberry.field(description="OpenMPI rankfile: pins every rank, whatever the order")
    contiguous: bool = strawberry.field(description="Each host holds a contiguous run of ranks (torchrun's numbering)")
    nccl_env: list[str] = strawberry.field(description="NCCL environment hints, NAME=value")


@strawberry.type(description="A shaped job's placement, or why none exists.")
class ShapedPlacementResult:
    request: str = strawberry.field(description="The request in canonical text form")
    shape: JobShape | None  # type: ignore[valid-type]
    job_tier: Tier | None  # type: ignore[valid-type]
    job_unit: str | None
    groups: list[GroupPlacement]  # type: ignore[valid-type]
    ranks: list[RankSlot]  # type: ignore[valid-type]
    bandwidth: list[LevelBandwidth]  # type: ignore[valid-type]
    rail_aligned_share: float | None
    escalated: list[str] = strawberry.field(description="Levels widened because the preferred one could not hold")
    reason: str
    launch: LaunchPlan | None
    infeasible: list[InfeasibleReason]
    hosts_read: int
    elapsed_ms: float


def _empty(text: str, infeasible: list[InfeasibleReason]) -> ShapedPlacementResult:
    return ShapedPlacementResult(
        request=text, shape=None, job_tier=None, job_unit=None, groups=[], ranks=[], bandwidth=[],
        rail_aligned_share=None, escalated=[], reason="", launch=None, infeasible=infeasible, hosts_read=0,
        elapsed_ms=0.0,
    )  # fmt: skip


@strawberry.type
class ShapedQuery:
    @strawberry.field(
        description='Place a shaped job, e.g. "tp=8 pp=2 dp=4 model=H100" or '
        '"groups=8 group-size=8 group-in=nvlink-domain job-in=scalable-unit spread=leaves".'
    )
    async def shaped_placement(self, info: Info, text: str) -> ShapedPlacementResult:
        info.context.require(*READERS)
        ctx = info.context
        try:
            job = shape.parse_shape(text)
        except RequestError as err:
            return _empty(text, [InfeasibleReason(constraint=err.field, message=err.message, nearest_feasible=None)])
        result = await place_shaped(ctx.gateway, job, stale_after_s=ctx.settings.stale_after_s)
        reasons = [
            InfeasibleReason(constraint=r.constraint, message=r.message, nearest_feasible=r.nearest_feasible)
            for r in result.infeasible
        ]
        p = result.placement
        if p is None:
            out = _empty(job.text(), reasons)
            out.hosts_read, out.elapsed_ms = result.hosts_read, round(result.elapsed_ms, 3)
            return out
        plan = rank_layout.launch_plan(p)
        return ShapedPlacementResult(
            request=job.text(),
            shape=job,
            job_tier=p.job_tier,
            job_unit=p.job_unit,
            groups=p.groups,
            ranks=p.ranks,
            bandwidth=p.bandwidth,
            rail_aligned_share=p.rail_aligned_share,
            escalated=p.escalated,
            reason=p.reason,
            launch=LaunchPlan(
                hostfile=plan.hostfile,
                hosts=plan.hosts,
                rankfile=plan.rankfile,
                contiguous=plan.contiguous,
                nccl_env=[f"{k}={v}" for k, v in plan.nccl_env.items()],
            ),
            infeasible=[],
            hosts_read=result.hosts_read,
            elapsed_ms=round(result.elapsed_ms, 3),
        )
