"""GraphQL for the explorer's own reads (search, per-leaf load); the logic is graphsvc.explorer."""

from __future__ import annotations

import time
from typing import cast

import strawberry
from strawberry.scalars import JSON

from graphsvc import explorer


@strawberry.type(description="A search result: a host, a switch or a GPU, best match first.")
class SearchHit:
    kind: str = strawberry.field(description="host, switch or gpu")
    name: str = strawberry.field(description="host or switch name, or GPU uuid")
    host: str | None = strawberry.field(description="the host to open (a GPU's host; a host itself)")
    detail: str
    score: float = strawberry.field(description="1 exact; 0.8 and above: the whole text matched")


@strawberry.type(description="A leaf switch's share of GPUs: those whose nearest NIC is cabled to it.")
class LeafLoad:
    leaf: str
    gpus: int
    free_gpus: int = strawberry.field(description="free and healthy")


def search_hits(found: list[explorer.Hit]) -> list[SearchHit]:
    return [SearchHit(kind=h.kind, name=h.name, host=h.host, detail=h.detail, score=h.score) for h in found]


def leaf_loads(found: list[explorer.LeafLoad]) -> list[LeafLoad]:
    return [LeafLoad(leaf=x.leaf, gpus=x.gpus, free_gpus=x.free) for x in found]


@strawberry.type(description="Every GPU's drawing state as rows of plain values (columns name them), for the overview.")
class GPUGrid:
    columns: list[str]
    rows: JSON = strawberry.field(description="one list per GPU, in `columns` order")
    end_cursor: str | None
    has_next_page: bool


def gpu_grid(page: explorer.GridPage) -> GPUGrid:
    return GPUGrid(
        columns=explorer.GRID_COLUMNS,
        rows=cast(JSON, page.rows),
        end_cursor=page.end_cursor,
        has_next_page=page.has_next_page,
    )


@strawberry.type(description="A host with a NIC cabled to the switch asked about.")
class CabledHost:
    name: str
    free_gpus: int
    stale: bool


def cabled_hosts(found: list[explorer.CabledHost], stale_after_s: float) -> list[CabledHost]:
    now = time.time()
    return [
        CabledHost(name=h.name, free_gpus=h.free, stale=bool(h.received_at and now - h.received_at > stale_after_s))
        for h in found
    ]
