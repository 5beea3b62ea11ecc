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


@strawberry.input(description="Where a set of GPUs must (required) or should (preferred) sit.")
class LevelInput:
    tier: Tier  # type: ignore[valid-type]
    required: bool = False


@strawberry.input(description="A job as TP groups: tp GPUs per group, pp*dp groups (the text form's fields).")
class ShapedRequestInput:
    tp: int
    pp: int = 1
    dp: int = 1
    model: str | None = None
    min_memory_gib: float | None = strawberry.field(name="minMemoryGiB", default=None)
    group_in: LevelInput | None = strawberry.field(default=None, description="Default: nvlink-domain, required")
    job_in: LevelInput | None = strawberry.field(default=None, description="Default: leaf, preferred")
    spread_leaves: bool = False
    exclude_hosts: list[str] = strawberry.field(default_factory=list)
    exclude_unhealthy: bool = True

    def to_shape(self) -> shape.JobShape:
        group = shape.Level(self.group_in.tier, self.group_in.required) if self.group_in else None
        job = shape.Level(self.job_in.tier, self.job_in.required) if self.job_in else None
        return shape.JobShape(
            tp=self.tp,
            pp=self.pp,
            dp=self.dp,
            model=self.model,
            min_memory_gib=self.min_memory_gib,
            group_level=group or shape.JobShape.group_level,
            job_level=job or shape.JobShape.job_level,
            spread_leaves=self.spread_leaves,
            exclude_hosts=tuple(self.exclude_hosts),
            exclude_unhealthy=self.exclude_unhealthy,
        ).validated()


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


def _parse(text: str) -> shape.JobShape:
    return shape.parse_shape(text)


@strawberry.type
class ShapedQuery:
    @strawberry.field(
        description='Place a shaped job, given as text ("tp=8 pp=2 dp=4 model=H100", "groups=8 group-size=8 '
        'group-in=nvlink-domain job-in=scalable-unit spread=leaves") or as fields (shape); exactly one.'
    )
    async def shaped_placement(
        self, info: Info, text: str | None = None, shape: ShapedRequestInput | None = None
    ) -> ShapedPlacementResult:
        info.context.require(*READERS)
        ctx = info.context
        try:
            if (text is None) == (shape is None):
                raise RequestError("text", "give the job either as text or as shape, not both or neither")
            job = _parse(text) if text is not None else shape.to_shape()  # type: ignore[union-attr]
        except RequestError as err:
            reason = InfeasibleReason(err.field, err.message)
            return _empty(text or "", [reason])
        result = await ctx.services.place_shaped(job)
        reasons = list(result.infeasible)
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
