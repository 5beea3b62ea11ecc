"""Sites over GraphQL: the sites and their links, cost facts, compareSites, and placement
across sites; operators set cost facts. Resolvers call graphsvc.sites.service only."""

from __future__ import annotations

import time
from enum import Enum
from typing import Annotated

import strawberry
from pydantic import ValidationError as PydanticError

from graphsvc.api.graphql import cost
from graphsvc.api.graphql.context import READERS, Info
from graphsvc.api.graphql.errors import ValidationError
from graphsvc.api.graphql.inputs import PlacementRequestInput
from graphsvc.api.graphql.placement import to_graphql
from graphsvc.api.graphql.types import PlacementCandidate
from graphsvc.placement.request import RequestError, parse_request
from graphsvc.security.auth import Role
from graphsvc.sites import service
from graphsvc.sites.catalog import FactIn
from graphsvc.sites.compare import Objective, SiteOption
from graphsvc.sites.estimate import JobProfile
from graphsvc.sites.model import Fact


@strawberry.enum(description="What compareSites ranks by.")
class SiteObjective(Enum):
    CHEAPEST = "cheapest"
    FASTEST = "fastest"
    CHEAPEST_UNDER_DEADLINE = "cheapest-under-deadline"
    LOWEST_CARBON = "lowest-carbon"


@strawberry.type
class SiteGPUs:
    model: str
    gpus: int
    free: int


@strawberry.type(description="An on-prem data centre, a cloud region or an availability zone; owns clusters.")
class Site:
    name: str
    kind: str
    provider: str | None
    region: str | None
    location: str | None
    parent: str | None
    capacity_kinds: list[str]
    spot_preemption_per_hour: float | None
    clusters: list[str]
    gpus: list[SiteGPUs]


@strawberry.type(description="The network between two sites (read undirected).")
class SiteLink:
    a: str
    b: str
    bandwidth_gbps: float
    latency_ms: float


@strawberry.type(description="A cost or energy fact with its source and the date it was true.")
class CostFact:
    key: str
    kind: str
    value: float
    unit: str
    source: str
    as_of: str
    site: str | None
    model: str | None
    capacity: str | None
    catalog: str | None
    note: str | None


def _fact(f: Fact) -> CostFact:
    return CostFact(
        key=f.key,
        kind=f.kind.value,
        value=f.value,
        unit=f.unit,
        source=f.source,
        as_of=f.as_of,
        site=f.site,
        model=f.model,
        capacity=f.capacity,
        catalog=f.catalog,
        note=f.note,
    )


@strawberry.input(description="What the caller knows about the job; docs/sites.md has the formulas.")
class JobProfileInput:
    gpu_hours: float = strawberry.field(description="GPU-hours at full speed on referenceModel at referenceGbps")
    comm_share: float = strawberry.field(default=0.0, description="Share of step time that is communication (0..1)")
    reference_model: str | None = strawberry.field(default=None, description="The model gpuHours was measured on")
    reference_gbps: float = strawberry.field(default=50.0, description="Per-GPU GB/s commShare was measured at")
    dataset_gb: float = strawberry.field(name="datasetGB", default=0.0)
    data_site: str | None = strawberry.field(default=None, description="The site where the dataset lives")
    checkpoint_interval_hours: float = strawberry.field(
        default=1.0, description="For spot: work lost per preemption is half"
    )

    def to_profile(self) -> JobProfile:
        return JobProfile(
            gpu_hours=self.gpu_hours,
            comm_share=self.comm_share,
            reference_model=self.reference_model,
            reference_gbps=self.reference_gbps,
            dataset_gb=self.dataset_gb,
            data_site=self.data_site,
            checkpoint_interval_h=self.checkpoint_interval_hours,
        )


@strawberry.type(description="One site's best placement and capacity kind, with every estimate its facts allow.")
class SiteEstimate:
    rank: int
    site: str
    capacity: str | None
    fits: bool
    hosts: list[str]
    gpus: int
    model: str | None
    bottleneck_gbps: float | None
    speed: float | None
    wait_hours: float | None = strawberry.field(
        description="Hours until enough leases run out for the job to fit here (0: it fits now; a lower bound, "
        "since a renewed lease ends later). When waitCoarse, an upper bound of what the full search finds"
    )
    wait_coarse: bool = strawberry.field(
        description="The wait was searched with fewer placement searches than its bisection needs (the query's "
        "cost limit paid for no more): waitHours is the first lease expiry tested after which the job fits, "
        "and the full search's wait lies in [waitFromHours, waitHours]; with no wait search at all the site "
        "does not fit (nothing is known after now). waitReason says how many searches ran"
    )
    wait_from_hours: float | None = strawberry.field(
        description="The least the full search's wait can be: waitHours unless waitCoarse; null without a placement"
    )
    wait_reason: str | None = strawberry.field(description="Why the wait is coarse, and its range; null when not")
    run_hours: float | None
    transfer_hours: float | None
    total_hours: float | None
    compute_cost: float | None
    transfer_cost: float | None
    total_cost: float | None = strawberry.field(description="USD: GPU-hours plus moving the data")
    power_w: float | None
    power_source: str | None
    energy_kwh: float | None = strawberry.field(name="energyKWh")
    carbon_kg: float | None
    meets_deadline: bool | None
    complete: bool = strawberry.field(description="Every number is known (no fact missing)")
    missing: list[str] = strawberry.field(description="Facts not known, by name; their numbers are null, never 0")
    stale: list[str] = strawberry.field(description="Facts used although older than maxFactAgeDays")
    facts: list[CostFact]
    reason: str


@strawberry.type(description="Sites ranked by the objective; `choice` is the first that satisfies it, or null.")
class SiteComparison:
    request: str
    objective: SiteObjective
    deadline_hours: float | None
    choice: str | None
    sites: list[SiteEstimate]


def _estimate(rank: int, o: SiteOption) -> SiteEstimate:
    p = o.placement
    return SiteEstimate(
        rank=rank,
        site=o.site,
        capacity=o.capacity,
        fits=o.fits,
        hosts=list(p.hosts) if p else [],
        gpus=p.gpus if p else 0,
        model=p.model if p else None,
        bottleneck_gbps=p.bottleneck_gbps if p else None,
        speed=o.speed,
        wait_hours=p.wait_hours if p else None,
        wait_coarse=o.wait_coarse,
        wait_from_hours=p.wait_from_hours if p else None,
        wait_reason=o.wait_reason,
        run_hours=o.run_hours,
        transfer_hours=o.transfer_hours,
        total_hours=o.total_hours,
        compute_cost=o.compute_cost,
        transfer_cost=o.transfer_cost,
        total_cost=o.total_cost,
        power_w=o.power_w,
        power_source=o.power_source,
        energy_kwh=o.energy_kwh,
        carbon_kg=o.carbon_kg,
        meets_deadline=o.meets_deadline,
        complete=o.complete,
        missing=o.missing,
        stale=o.stale,
        facts=[_fact(f) for f in o.facts],
        reason=o.reason,
    )


CompareSitesResult = Annotated[SiteComparison | ValidationError, strawberry.union("CompareSitesResult")]


@strawberry.type(description="The inter-site link a spanning placement crosses, and each GPU's share of it.")
class InterSiteLink:
    sites: list[str]
    link: str
    bandwidth_gbps: float | None
    latency_ms: float | None
    per_gpu_gbps: float | None
    missing: str | None


@strawberry.type
class SitePlacementCandidate:
    sites: list[str]
    inter_site: InterSiteLink | None
    candidate: PlacementCandidate


@strawberry.type(description="Placement with the sites each candidate uses.")
class SitePlacement:
    request: str
    candidates: list[SitePlacementCandidate]
    infeasible: list[str]


SitePlacementResult = Annotated[SitePlacement | ValidationError, strawberry.union("SitePlacementResult")]


@strawberry.type
class SitesQuery:
    @strawberry.field(description="Every site with its clusters, capacity kinds and GPUs by model.")
    async def sites(self, info: Info) -> list[Site]:
        info.context.require(*READERS)
        sites, counts = await info.context.services.sites.overview()
        return [
            Site(
                name=s.name,
                kind=s.kind.value,
                provider=s.provider,
                region=s.region,
                location=s.location,
                parent=s.parent,
                capacity_kinds=[k.value for k in s.capacity_kinds],
                spot_preemption_per_hour=s.spot_preemption_per_h,
                clusters=list(s.clusters),
                gpus=[SiteGPUs(model=m, gpus=n, free=f) for m, n, f in counts.get(s.name, [])],
            )
            for s in sites
        ]

    @strawberry.field(description="The links between sites.")
    async def site_links(self, info: Info) -> list[SiteLink]:
        info.context.require(*READERS)
        return [
            SiteLink(a=x.a, b=x.b, bandwidth_gbps=x.bandwidth_gbps, latency_ms=x.latency_ms)
            for x in await info.context.services.sites.links()
        ]

    @strawberry.field(description="Every cost and energy fact, by key.")
    async def cost_facts(self, info: Info) -> list[CostFact]:
        info.context.require(*READERS)
        return [_fact(f) for f in await info.context.services.sites.facts()]

    @strawberry.field(
        description="For each site: the best placement now, run time, cost, data transfer, energy and carbon; "
        "ranked by the objective. Missing facts are named, never read as 0."
    )
    async def compare_sites(
        self,
        info: Info,
        profile: JobProfileInput,
        request: PlacementRequestInput | None = None,
        text: Annotated[
            str | None, strawberry.argument(description='Or the text form, e.g. "64xH100 per-host=8"')
        ] = None,
        objective: SiteObjective = SiteObjective.CHEAPEST,
        deadline_hours: float | None = None,
        max_fact_age_days: float = service.DEFAULT_MAX_AGE_DAYS,
        sites: list[str] | None = None,
    ) -> CompareSitesResult:
        info.context.require(*READERS)
        try:
            if (request is None) == (text is None):
                raise RequestError("request", "give either request or text")
            req = request.to_request() if request is not None else parse_request(text or "")
            result = await service.compare_sites(
                info.context.engine,
                req,
                profile.to_profile(),
                Objective(objective.value),
                deadline_h=deadline_hours,
                max_age_days=max_fact_age_days,
                only=tuple(sites or ()),
                wait_searches=cost.wait_searches_for(info.context, str(info.path.key)),
            )
        except RequestError as err:
            return ValidationError(field=err.field, message=err.message)
        choice = result.choice
        return SiteComparison(
            request=result.request,
            objective=objective,
            deadline_hours=deadline_hours,
            choice=choice.site if choice else None,
            sites=[_estimate(i, o) for i, o in enumerate(result.options, start=1)],
        )

    @strawberry.field(
        description="Placement naming each candidate's sites; with allowCrossSite a candidate may span sites and "
        "then shows the inter-site link as its bottleneck."
    )
    async def site_placement(
        self, info: Info, request: PlacementRequestInput, sites: list[str] | None = None, allow_cross_site: bool = False
    ) -> SitePlacementResult:
        info.context.require(*READERS)
        try:
            base = request.to_request()
            req = base.with_(
                sites=tuple(sites) if sites else base.sites, cross_site=allow_cross_site or base.cross_site
            ).validated()
        except RequestError as err:
            return ValidationError(field=err.field, message=err.message)
        result = await info.context.engine.place(req)
        shown = to_graphql(req, result)
        out = []
        for cand, gql in zip(result.candidates, shown.candidates, strict=True):
            x = cand.inter_site
            out.append(
                SitePlacementCandidate(
                    sites=sorted({h.site or "(no site)" for h in cand.hosts}),
                    inter_site=InterSiteLink(
                        sites=x.sites,
                        link=x.link,
                        bandwidth_gbps=x.bandwidth_gbps,
                        latency_ms=x.latency_ms,
                        per_gpu_gbps=x.per_gpu_gbps,
                        missing=x.missing,
                    )
                    if x
                    else None,
                    candidate=gql,
                )
            )
        return SitePlacement(request=shown.request, candidates=out, infeasible=[r.message for r in result.infeasible])


@strawberry.input(description="One cost or energy fact; a fact dated earlier than the stored one is not applied.")
class CostFactInput:
    kind: str
    value: float
    source: str
    as_of: str = strawberry.field(description="YYYY-MM-DD")
    site: str | None = None
    model: str | None = None
    capacity: str | None = None
    note: str | None = None


@strawberry.type
class CostFactsWritten:
    written: list[str]
    kept_newer: list[str]


SetCostFactResult = Annotated[CostFactsWritten | ValidationError, strawberry.union("SetCostFactResult")]


@strawberry.type
class SitesMutations:
    @strawberry.mutation(description="Operators: set one price, power, carbon, PUE or speed fact (with its source).")
    async def set_cost_fact(self, info: Info, fact: CostFactInput) -> SetCostFactResult:
        info.context.require(Role.OPERATOR)
        info.context.limit_mutations()
        try:
            parsed = FactIn.model_validate(
                {k: v for k, v in vars(fact).items() if v is not None or k in ("kind", "value", "source", "as_of")}
            )
        except PydanticError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "fact"
            return ValidationError(field=where, message=str(first.get("msg", "invalid")))
        done = await info.context.services.sites.set_fact(parsed.fact("graphql"), time.time())
        return CostFactsWritten(written=done.written, kept_newer=done.kept_newer)
