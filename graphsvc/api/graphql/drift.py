"""GraphQL `drift`: compare a deployed scheduler copy with the graph (graphsvc.exports.drift_check).

Expected failures are typed results: an unreadable copy (`DriftInputInvalid`) and a cluster
without hosts (`DriftClusterNotFound`); both carry a message.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import strawberry

from graphsvc.api.graphql.errors import Error
from graphsvc.exports.drift import DriftInputError
from graphsvc.exports.render import ExportError
from graphsvc.services import Services


@strawberry.enum(description="Which scheduler's copy: Slurm topology.conf/topology.yaml, Kueue, Volcano, node labels.")
class DriftFormat(Enum):
    SLURM = "slurm"
    KUEUE = "kueue"
    VOLCANO = "volcano"
    LABELS = "labels"


@strawberry.type(description="One difference: kind node|switch|block|block-member|block-size|tier|level|label.")
class DriftEntry:
    kind: str
    change: str = strawberry.field(description="missing (graph has it), extra (only deployed), moved, changed")
    name: str
    expected: str | None = strawberry.field(description="What the graph says")
    deployed: str | None = strawberry.field(description="What the deployed copy says")
    message: str


@strawberry.type(description="Kind and change with how many entries of it.")
class DriftCount:
    what: str
    count: int


@strawberry.type(description="The comparison; `drifted` is false when the deployed copy matches the graph.")
class DriftReport:
    format: DriftFormat
    cluster: str
    drifted: bool
    entries: list[DriftEntry]
    counts: list[DriftCount]
    graph_version: int | None
    facts_as_of: float | None


@strawberry.type(description="The deployed copy could not be read as that format.")
class DriftInputInvalid(Error):
    pass


@strawberry.type(description="The cluster has no hosts in the graph.")
class DriftClusterNotFound(Error):
    cluster: str


DriftResult = Annotated[DriftReport | DriftInputInvalid | DriftClusterNotFound, strawberry.union("DriftResult")]


async def drift(services: Services, fmt: DriftFormat, deployed: str, cluster: str) -> DriftResult:
    try:
        result = await services.drift(fmt.value, deployed, cluster)
    except DriftInputError as exc:
        return DriftInputInvalid(message=str(exc))
    except ExportError as exc:
        return DriftClusterNotFound(cluster=cluster, message=exc.message)
    return DriftReport(
        format=fmt,
        cluster=cluster,
        drifted=result.drifted,
        entries=[
            DriftEntry(
                kind=i.kind,
                change=i.change,
                name=i.name,
                expected=i.expected,
                deployed=i.deployed,
                message=i.describe(),
            )
            for i in result.items
        ],
        counts=[DriftCount(what=k, count=v) for k, v in sorted(result.summary().items())],
        graph_version=result.stamp.graph_version,
        facts_as_of=result.stamp.facts_as_of,
    )
