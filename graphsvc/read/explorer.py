"""Reads the explorer needs that the browse API does not give: fuzzy search, per-leaf load.

Search is served by the service, not done in the browser over every GPU: a named query
narrows the graph to names containing any piece of the text ("su3-n17" -> "su3", "n17"), and
`rank` (pure, table-tested) orders them, whole-text matches first, so a partial or slightly
wrong name still finds its host.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from dataclasses import dataclass, replace

from topo_facts.models import MAX_TEXT_LENGTH

from graphsvc.errors import InvalidInput
from graphsvc.paging import page_size
from graphsvc.store.gateway import Gateway

CANDIDATES = 300  # names fetched per kind before ranking


@dataclass(frozen=True)
class SearchHit:
    kind: str  # host | switch | gpu
    name: str  # host or switch name, GPU uuid
    host: str | None  # the host a GPU is in (for a host: itself)
    detail: str
    score: float
    # The cluster the hit is in (a GPU's: its host's), read with the hit; None where the graph has
    # none (a switch from a fabric without one). Last, with a default: hits are built positionally.
    cluster: str | None = None


def pieces(text: str) -> list[str]:
    """The lowercased text and its parts split at - _ . : and spaces (two characters or more)."""
    low = text.strip().lower()
    parts = [p for p in re.split(r"[-_.:\s]+", low) if len(p) >= 2]
    return list(dict.fromkeys([low, *parts]))[:8] if low else []


def natural_key(name: str) -> tuple[object, ...]:
    """mlx5_3 before mlx5_10: digit runs compare as numbers."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name.lower()))


def score(text: str, name: str) -> float:
    """1 exact; 0.9 whole text at a name boundary; 0.8 anywhere; below, shared pieces and likeness."""
    low, cand = text.strip().lower(), name.lower()
    if not low:
        return 0.0
    if cand == low:
        return 1.0
    if cand.startswith(low) or cand.endswith(low) or f"-{low}" in cand:
        return 0.9
    if low in cand:
        return 0.8
    parts = pieces(text)[1:]
    shared = sum(1 for p in parts if p in cand) / len(parts) if parts else 0.0
    return round(0.5 * shared + 0.25 * difflib.SequenceMatcher(None, low, cand).ratio(), 4)


def rank(text: str, hits: list[SearchHit], first: int) -> list[SearchHit]:
    ranked = [replace(h, score=score(text, h.name)) for h in hits]
    ranked.sort(key=lambda h: (-h.score, natural_key(h.name)))
    return [h for h in ranked if h.score > 0][:first]


async def search(gw: Gateway, text: str, first: int = 20) -> list[SearchHit]:
    """Hosts, switches and GPUs by partial or approximate name. The text is at most
    MAX_TEXT_LENGTH characters (no stored name is longer): ranking compares it with each of up to ~900 names,
    ~0.2 ms a name at that length, and it runs off the event loop, so reserves and renews are
    answered meanwhile (a 200 KB text once held the loop for ~78 s)."""
    if len(text) > MAX_TEXT_LENGTH:
        raise InvalidInput(f"search text: at most {MAX_TEXT_LENGTH} characters, no name is longer (got {len(text)})")
    first = page_size(first, 100)
    parts = pieces(text)
    if not parts or not first:
        return []
    hits: list[SearchHit] = []
    for r in await gw.read("search_hosts", {"pieces": parts, "first": CANDIDATES}):
        where = " · ".join(str(v) for v in (r["model"], r["scalable_unit"] or r["rack"]) if v)
        hits.append(SearchHit("host", r["name"], r["name"], where, 0.0, r["cluster"]))
    for r in await gw.read("search_switches", {"pieces": parts, "first": CANDIDATES}):
        rail = f" · rail {r['rail']}" if r["rail"] is not None else ""
        hits.append(SearchHit("switch", r["name"], None, f"{r['tier']} switch{rail}", 0.0, r["cluster"]))
    if len(parts[0]) >= 6:  # GPU uuids are long; a short text would match thousands
        for r in await gw.read("search_gpus", {"needle": parts[0], "first": first}):
            detail = f"GPU {r['index']} of {r['host']} · {r['model']}"
            hits.append(SearchHit("gpu", r["uuid"], r["host"], detail, 0.0, r["cluster"]))
    return await asyncio.to_thread(rank, text, hits, first)


@dataclass(frozen=True)
class LeafLoad:
    leaf: str
    gpus: int  # GPUs whose nearest NIC is cabled to this leaf
    free_gpus: int  # ... of them free and healthy


async def leaf_load(gw: Gateway, cluster: str) -> list[LeafLoad]:
    rows = await gw.read("leaf_rail_load", {"cluster": cluster})
    return [LeafLoad(r["leaf"], int(r["gpus"]), int(r["free"] or 0)) for r in rows]


GRID_COLUMNS = ["uuid", "index", "model", "state", "health", "temperatureC", "utilizationPct", "nvlinkDomain", "host"]
GRID_PAGE = 5000


@dataclass(frozen=True)
class GridPage:
    rows: list[list[object]]  # one list per GPU, in GRID_COLUMNS order
    end_cursor: str | None
    has_next_page: bool


async def gpu_grid(gw: Gateway, after: str | None, first: int = GRID_PAGE) -> GridPage:
    """Every GPU's drawing state as rows of plain values: the overview of 10,000 GPUs in two
    requests, where one GraphQL object per GPU costs seconds to resolve and serialise."""
    first = page_size(first, GRID_PAGE)
    found = await gw.read("explorer_gpu_grid", {"after": after or "", "first": first + 1})
    rows = [
        [r["uuid"], r["index"], r["model"], r["state"], r["health"], r["temperature_c"], r["utilization_pct"],
         r["nvlink_domain"], r["host"]]
        for r in found[:first]
    ]  # fmt: skip
    return GridPage(rows, rows[-1][0] if rows else None, len(found) > first)


@dataclass(frozen=True)
class CabledHost:
    name: str
    free_gpus: int
    received_at: float | None


async def leaf_hosts(gw: Gateway, leaf: str) -> list[CabledHost]:
    """The hosts cabled to a switch (any leaf, with or without a scalable unit)."""
    rows = await gw.read("explorer_leaf_hosts", {"leaf": leaf})
    return [CabledHost(r["name"], int(r["free_gpus"] or 0), r["received_at"]) for r in rows]
