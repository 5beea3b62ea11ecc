"""GraphQL for the explorer's own reads (search, per-leaf load); the logic is graphsvc.read.explorer."""

from __future__ import annotations

import time
from typing import cast

import strawberry
from strawberry.scalars import JSON

from graphsvc.api.graphql.types import wrap
from graphsvc.read import explorer
from graphsvc.read.browse import is_stale
from graphsvc.read.explorer import LeafLoad, SearchHit

__all__ = ["CabledHost", "GPUGrid", "LeafLoad", "SearchHit", "cabled_hosts", "gpu_grid"]


wrap(
    SearchHit,
    description="A search result: a host, a switch or a GPU, best match first.",
    fields={
        "kind": "host, switch or gpu",
        "name": "host or switch name, or GPU uuid",
        "host": "the host to open (a GPU's host; a host itself)",
        "cluster": "the cluster it is in (a GPU's: its host's); null where the graph names none",
        "score": "1 exact; 0.8 and above: the whole text matched",
    },
)
wrap(
    LeafLoad,
    description="A leaf switch's share of GPUs: those whose nearest NIC is cabled to it.",
    fields={"free_gpus": "free and healthy"},
)


@strawberry.type(description="Every GPU's drawing state as rows of plain values (columns name them), for the overview.")
class GPUGrid:
    columns: list[str]
    rows: JSON = strawberry.field(description="one list per GPU, in `columns` order")
    end_cursor: str | None
    has_next_page: bool


def gpu_grid(page: explorer.GridPage) -> GPUGrid:
    """An empty page (`first` below 1) says no more follow, as `hosts`, `gpus` and `fabric` do
    (graphsvc.read.browse.more_after): it has no end cursor to go on from, and "more" sent a
    client following hasNextPage back to the start, forever."""
    return GPUGrid(
        columns=explorer.GRID_COLUMNS,
        rows=cast(JSON, page.rows),
        end_cursor=page.end_cursor,
        has_next_page=page.has_next_page and bool(page.rows),
    )


@strawberry.type(description="A host with a NIC cabled to the switch asked about.")
class CabledHost:
    name: str
    free_gpus: int
    stale: bool


def cabled_hosts(found: list[explorer.CabledHost], stale_after_s: float) -> list[CabledHost]:
    now = time.time()
    return [
        CabledHost(name=h.name, free_gpus=h.free_gpus, stale=is_stale(h.received_at, now, stale_after_s)) for h in found
    ]
