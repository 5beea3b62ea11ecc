"""GraphQL inputs, their translation to the placement request, and the rule for client text.

Client text a mutation stores or sends to the store (ids, GPU uuids, holders, keys, labels,
phase names, a fact's source, site and note, ...) is printable: no control character, line
break, surrogate or bidi control (topo_facts.models.UNPRINTABLE, the rule fact documents,
placement names and reservation labels already follow). A NUL reached the store, where FalkorDB
refused the statement (an untyped error and a failed query in the log) and Neo4j matched nothing
or wrote it. `unprintable_argument` finds such text in a field's arguments, so the schema answers
a typed ValidationError naming the field before the resolver runs (graphql/schema.py), on both
stores alike; the REST routes use `unprintable_value` on their bodies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry
from graphql import (
    GraphQLArgument,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
)
from topo_facts.models import UNPRINTABLE

from graphsvc.api.graphql.types import wrap
from graphsvc.placement.capabilities import CapabilityNeeds
from graphsvc.placement.request import NVLinkRequirement, Packing, PlacementRequest
from graphsvc.read import browse
from graphsvc.read.browse import GPUFilter, HostFilter

__all__ = [
    "GPUFilter",
    "HostFilter",
    "PlacementPreferences",
    "PlacementRequestInput",
    "unprintable_argument",
    "unprintable_value",
]

# Inputs whose text is checked where it is read, naming its fields its own way: a placement
# request's host and site names (placement.request._check_names: "excludeHosts",
# "preferences.hosts"); its model and MIG profile are matched in memory, never sent to a store.
CHECKED_ELSEWHERE = frozenset({"PlacementRequestInput"})


def unprintable_value(value: object, path: str = "") -> tuple[str, str] | None:
    """The first text in `value` (a string, or lists and mappings of them) that breaks the rule:
    (its field's path, dotted; the message). Mapping keys are the field names."""
    if isinstance(value, str):
        found = UNPRINTABLE.search(value)
        if found is None:
            return None
        return path, (
            f"must be printable: no control characters, line breaks or bidi controls "
            f"(found {found.group()!r} at position {found.start()})"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            hit = unprintable_value(item, f"{path}.{key}" if path else str(key))
            if hit is not None:
                return hit
    elif isinstance(value, list | tuple):
        for item in value:
            hit = unprintable_value(item, path)
            if hit is not None:
                return hit
    return None


def unprintable_argument(args: Mapping[str, GraphQLArgument], values: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first argument text (as graphql-core hands a resolver its coerced arguments) that breaks
    the rule: (the field, named as the service names its own: an input object's fields by their
    GraphQL names without the argument's, "gpus" for `reserve(input: {gpus: [...]})`; a scalar
    argument by its name, "id"; the message)."""
    for name, arg in args.items():
        if name in values:
            top = _named(arg.type)
            hit = _walk(values[name], arg.type, "" if isinstance(top, GraphQLInputObjectType) else name)
            if hit is not None:
                return hit
    return None


def _named(type_: GraphQLInputType) -> GraphQLInputType:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    return type_


def _walk(value: object, type_: GraphQLInputType, path: str) -> tuple[str, str] | None:
    if value is None:
        return None
    if isinstance(type_, GraphQLNonNull):
        return _walk(value, type_.of_type, path)
    if isinstance(type_, GraphQLList):
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            hit = _walk(item, type_.of_type, path)
            if hit is not None:
                return hit
        return None
    if isinstance(type_, GraphQLInputObjectType):
        if type_.name in CHECKED_ELSEWHERE or not isinstance(value, Mapping):
            return None
        for key, field in type_.fields.items():
            if key in value:
                hit = _walk(value[key], field.type, f"{path}.{key}" if path else key)
                if hit is not None:
                    return hit
        return None
    return unprintable_value(value, path) if isinstance(value, str) else None


@strawberry.input(description="Soft preferences: they rank candidates, never exclude one.")
class PlacementPreferences:
    hosts: list[str] = strawberry.field(default_factory=list, description="Prefer these hosts")
    packing: Packing = Packing.BEST_FIT
    cooler_gpus: bool = True


@strawberry.input(description="An NVIDIA compute capability, e.g. 9.0 (Hopper) or 10.0 (Blackwell).")
class ComputeCapabilityInput:
    major: int
    minor: int = 0


@strawberry.input(description="What every chosen GPU must be able to do (hard constraints).")
class CapabilityInput:
    min_compute_capability: ComputeCapabilityInput | None = None
    min_memory_bandwidth_gbps: float | None = strawberry.field(
        name="minMemoryBandwidthGBps", default=None, description="GB/s of GPU memory bandwidth"
    )
    fp8: bool = False
    fp4: bool = False
    min_link_generation: int | None = strawberry.field(default=None, description="NVLink/xGMI generation")

    def to_needs(self) -> CapabilityNeeds:
        cc = self.min_compute_capability
        return CapabilityNeeds(
            min_compute_capability=(cc.major, cc.minor) if cc is not None else None,
            min_memory_bandwidth_gbps=self.min_memory_bandwidth_gbps,
            fp8=self.fp8,
            fp4=self.fp4,
            min_link_generation=self.min_link_generation,
        )


@strawberry.input(description="What a job needs. Hard constraints exclude; preferences only rank.")
class PlacementRequestInput:
    gpus: int
    model: str | None = strawberry.field(
        default=None,
        description="A model or family name, matched exactly (never as a substring): H100 (every H100), "
        "A100-80GB, NVIDIA A100-SXM4-40GB, GB200, MI300X. An unknown one is answered with the models there are.",
    )
    min_memory_gib: float | None = strawberry.field(name="minMemoryGiB", default=None)
    nvlink: NVLinkRequirement = NVLinkRequirement.NONE
    gpus_per_host: int | None = None
    max_ib_hops: int | None = None
    same_nvlink_domain: bool = False
    rail_aligned: bool = False
    gpu_nic_affinity: bool = False
    max_temperature_c: float | None = None
    exclude_unhealthy: bool = True
    exclude_hosts: list[str] = strawberry.field(default_factory=list)
    limit: int = 3
    exclusive: bool = strawberry.field(
        default=False, description="The job needs its GPUs to itself: GPUs busy outside reservations are not offered"
    )
    capabilities: CapabilityInput | None = None
    preferences: PlacementPreferences | None = None
    sites: list[str] = strawberry.field(default_factory=list, description="Only these sites (docs/sites.md)")
    allow_cross_site: bool = strawberry.field(
        default=False, description="One placement may span sites; the inter-site link is then its bottleneck"
    )
    mig_profile: str | None = strawberry.field(
        default=None,
        description="Ask for `gpus` MIG slices of this GPU instance profile (3g.40gb), never whole GPUs; "
        "only model, excludeHosts, preferences.hosts, limit and excludeUnhealthy apply. Answered in migCandidates.",
    )

    def to_request(self) -> PlacementRequest:
        prefs = self.preferences or PlacementPreferences()
        return PlacementRequest(
            gpus=self.gpus,
            model=self.model,
            min_memory_gib=self.min_memory_gib,
            nvlink=self.nvlink,
            gpus_per_host=self.gpus_per_host,
            max_ib_hops=self.max_ib_hops,
            same_nvlink_domain=self.same_nvlink_domain,
            rail_aligned=self.rail_aligned,
            gpu_nic_affinity=self.gpu_nic_affinity,
            max_temperature_c=self.max_temperature_c,
            exclude_unhealthy=self.exclude_unhealthy,
            exclude_hosts=tuple(self.exclude_hosts),
            limit=self.limit,
            exclusive=self.exclusive,
            prefer_hosts=tuple(prefs.hosts),
            packing=prefs.packing,
            cooler_gpus=prefs.cooler_gpus,
            capabilities=self.capabilities.to_needs() if self.capabilities is not None else CapabilityNeeds(),
            sites=tuple(self.sites),
            cross_site=self.allow_cross_site,
            mig_profile=self.mig_profile.lower() if self.mig_profile is not None else None,
        )


wrap(browse.HostFilter, make=strawberry.input)
wrap(browse.GPUFilter, make=strawberry.input, fields={"min_memory_gib": "=minMemoryGiB:"})
