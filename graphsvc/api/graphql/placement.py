"""Placement resolvers: structured and text requests, same engine, typed answers."""

from __future__ import annotations

from typing import cast

from strawberry.scalars import JSON

from graphsvc.api.graphql import mig
from graphsvc.api.graphql.context import Info
from graphsvc.api.graphql.selection import selects
from graphsvc.api.graphql.types import (
    GPU,
    CypherStatement,
    Fragmentation,
    HostRef,
    InfeasibleReason,
    PlacementCandidate,
    PlacementExplain,
    PlacementResult,
)
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.model import PlacementResult as EngineResult
from graphsvc.placement.request import PlacementRequest, RequestError, format_request, parse_request


def _invalid(text: str, err: RequestError) -> PlacementResult:
    return PlacementResult(
        request=text,
        candidates=[],
        infeasible=[InfeasibleReason(err.field, err.message)],
        searched_units=0,
        elapsed_ms=0.0,
    )


def to_graphql(req: PlacementRequest, result: EngineResult) -> PlacementResult:
    candidates = []
    for rank, c in enumerate(result.candidates, start=1):
        refs = {h.name: HostRef(name=h.name, rack=h.rack, scalable_unit=h.scalable_unit) for h in c.hosts}
        candidates.append(
            PlacementCandidate(
                rank=rank,
                gpus=[
                    GPU(
                        uuid=g.uuid,
                        index=g.index,
                        model=g.model,
                        memory_mib=g.memory_mib,
                        state=g.state,
                        health=g.health,
                        temperature_c=g.temperature_c,
                        utilization_pct=g.utilization_pct,
                        nvlink_domain=g.nvlink_domain,
                        host=refs.get(g.host) or HostRef(name=g.host),
                    )
                    for g in c.gpus
                ],
                hosts=list(refs.values()),
                score=c.score,
                bottleneck_gbps=c.bottleneck_gbps,
                max_ib_hops=c.max_ib_hops,
                ib_hops_known=c.ib_hops_known,
                rank_order=c.rank_order,
                fragmentation=Fragmentation(
                    largest_free_block_before=c.largest_free_block_before,
                    largest_free_block_after=c.largest_free_block_after,
                ),
                reason=c.reason,
                as_of=c.as_of_s,
            )
        )
    return PlacementResult(
        request=format_request(req),
        candidates=candidates,
        infeasible=list(result.infeasible),
        searched_units=result.searched_units,
        elapsed_ms=round(result.elapsed_ms, 3),
        explain=PlacementExplain(
            cypher=[
                CypherStatement(name=s.name, statement=s.text, parameters=cast(JSON, s.params), source=s)
                for s in result.statements
            ]
        ),
        mig_candidates=mig.candidates(result.mig_candidates),
    )


async def place(
    engine: PlacementEngine, build: PlacementRequest | None, text: str = "", *, explain: bool = True
) -> PlacementResult:
    """`explain`: diagnose an infeasible request (several more searches); off when the query
    does not select `infeasible`, so a scheduler that only reads candidates does not pay for it."""
    try:
        req = (build if build is not None else parse_request(text)).validated()
    except RequestError as err:
        return _invalid(text, err)
    return to_graphql(req, await engine.place(req, explain_infeasible=explain))


def selects_infeasible(info: Info) -> bool:
    """Does the query read `infeasible` of this field's result (directly or through fragments)?"""
    return any(selects(f.selections, {"infeasible"}) for f in info.selected_fields)
