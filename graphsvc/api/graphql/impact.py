"""Blast radius over GraphQL: `impact(of: {host | nvlinkDomain | switch | link})`."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc.api.graphql.context import READERS, Info
from graphsvc.api.graphql.errors import NotFound
from graphsvc.placement import impact as model

ImpactTarget = strawberry.enum(model.ImpactTarget, description="What kind of component fails.")
Effect = strawberry.enum(model.Effect, description="cut-off: ranks lost; slowed: a slower path remains.")
AffectedReservation = strawberry.type(
    model.AffectedReservation, description="A live reservation the failure reaches: its GPUs, ranks and hosts hit."
)


@strawberry.input(description="A switch-to-switch cable bundle, named by its lower and upper switch.")
class LinkInput:
    lower: str
    upper: str


@strawberry.input(one_of=True, description="Exactly one component.")
class ImpactInput:
    host: str | None = strawberry.UNSET
    nvlink_domain: str | None = strawberry.UNSET
    switch: str | None = strawberry.UNSET
    link: LinkInput | None = strawberry.UNSET


@strawberry.type(description="What the failure would cut off or slow, and the free capacity left.")
class Impact:
    target: ImpactTarget  # type: ignore[valid-type]
    name: str
    reservations: list[AffectedReservation]  # type: ignore[valid-type]
    holders: list[str]
    hosts_cut_off: list[str]
    free_gpus_lost: int
    free_gpus_left: int
    free_gpus_losing_nvlink: int
    summary: str


ImpactResult = Annotated[Impact | NotFound, strawberry.union("ImpactResult")]


@strawberry.type
class ImpactQuery:
    @strawberry.field(description="Blast radius: which reservations, holders, GPUs and ranks a failure would reach.")
    async def impact(self, info: Info, of: ImpactInput) -> ImpactResult:
        info.context.require(*READERS)
        if of.link:
            target, name, peer = model.ImpactTarget.LINK, of.link.lower, of.link.upper
        elif of.switch:
            target, name, peer = model.ImpactTarget.SWITCH, of.switch, None
        elif of.nvlink_domain:
            target, name, peer = model.ImpactTarget.NVLINK_DOMAIN, of.nvlink_domain, None
        else:
            target, name, peer = model.ImpactTarget.HOST, of.host or "", None
        try:
            found = await info.context.services.impact(target, name, peer)
        except model.UnknownTarget as err:
            return NotFound(id=name, message=str(err))
        return Impact(
            target=found.target,
            name=found.name,
            reservations=found.reservations,
            holders=found.holders,
            hosts_cut_off=found.hosts_cut_off,
            free_gpus_lost=found.free_gpus_lost,
            free_gpus_left=found.free_gpus_left,
            free_gpus_losing_nvlink=found.free_gpus_losing_nvlink,
            summary=found.summary,
        )
