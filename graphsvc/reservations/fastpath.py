"""The one-statement reserve for the common shape: all GPUs on one host.

`reservations/reserve_in_host.cypher` finds the candidates and takes one in a single
statement (no read-then-write race, two store round trips per reservation instead of ten);
`reserve_in_host_batch.cypher` does so for several requests at once, and each has a `_scan` form
for small clusters (`candidate_read`).
This module decides which requests it can answer exactly as the general search would allow
(everything it checks in Cypher is listed in `fast_path_mode`), and where among equally good
candidates a request starts (`slot`), so concurrent reserves spread over hosts instead of all
racing for the best fit. A request it cannot take falls back to the general path, which still
answers every shape; nothing here changes what a valid answer is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from typing import TypedDict

from graphsvc.placement.request import NVLinkRequirement, PlacementRequest

MAX_HOST_GPUS = 128
TOP_K = 8  # equally good candidates a request may land on
SCAN_HOSTS = 64  # hosts one statement looks at before it gives up (then the general path runs)
# Hosts up to which the one-host reserves (batch and single) scan every host rather than seek the
# free-count index: measured equal at ~500 hosts on an idle cluster, the scan cheaper on one SU
# (and flat under sustained reservations, where the seeks grow), the seeks ~7 ms a batch cheaper
# at ~4,000 hosts half reserved (docs/benchmarks.md, "Stop 40"). Between ~120 and 512 hosts it
# depends on how busy the cluster is: idle, the scan 10-20% cheaper; half reserved, the seek ~10%
# (the batch statement alone); the service as deployed measured the same with either at 255 hosts
# half reserved; from ~1,000 hosts half reserved the seek is 20-30% cheaper ("Stop 41").
SCAN_EVERY_HOST_UP_TO = 512


class InHostParams(TypedDict):
    """The parameters of reserve_in_host (the reservation's properties travel in `props`)."""

    first_size: int
    last_size: int
    exclude: list[str]
    model: str
    models: list[str]
    mode: str
    n: int
    k: int
    scan: int
    slot: int
    now: float
    stale_before: float
    props: dict[str, object]


# The request fields the statement evaluates (or that cannot matter on one host). Every other
# field must keep its default, so a constraint added to PlacementRequest later is never skipped
# here: such a request goes to the general search until the statement learns it.
FAST_PATH_FIELDS = frozenset(
    {"gpus", "model", "nvlink", "gpus_per_host", "max_ib_hops", "same_nvlink_domain", "exclude_hosts", "limit",
     "cooler_gpus", "sites", "cross_site"}
)  # fmt: skip


def _defaults_kept() -> tuple[Callable[[PlacementRequest], tuple[object, ...]], tuple[object, ...]] | None:
    """What reads the fields outside FAST_PATH_FIELDS and their defaults (a factory's value made
    once), so `fast_path_mode` compares one tuple per reserve instead of walking `fields()` and
    calling each default factory (~5 us of a reserve's CPU, the most of anything in this module;
    stop 66's profile). None when such a field has no default: no request can then
    be sure to keep it, and every request goes to the general search."""
    names: list[str] = []
    defaults: list[object] = []
    for f in fields(PlacementRequest):
        if f.name in FAST_PATH_FIELDS:
            continue
        if f.default is not MISSING:
            defaults.append(f.default)
        elif f.default_factory is not MISSING:
            defaults.append(f.default_factory())
        else:
            return None
        names.append(f.name)

    def values(req: PlacementRequest) -> tuple[object, ...]:
        return tuple(getattr(req, name) for name in names)

    return (attrgetter(*names) if len(names) > 1 else values), tuple(defaults)


_KEPT = _defaults_kept()


def fast_path_mode(req: PlacementRequest) -> str | None:
    """'none', 'any' or 'full-mesh' when one host's free GPUs can answer the request in Cypher.

    Evaluated in the statement: model (exact names), free state, health, MIG (never offered
    whole), excluded hosts, stale hosts, NVLink (one domain; for full mesh a switched one, where
    any members form a clique). Everything else (memory, temperature, NIC affinity, rails,
    capabilities, exclusivity, preferences, spread, per-host splits, site lists) goes to the
    general search.
    """
    if req.gpus_per_host not in (None, req.gpus) or req.gpus > MAX_HOST_GPUS:
        return None
    if req.sites:
        return None
    if _KEPT is None or _KEPT[0](req) != _KEPT[1]:
        return None
    if req.nvlink is NVLinkRequirement.FULL_MESH and req.gpus > 1:
        return "full-mesh"
    if (req.nvlink is NVLinkRequirement.ANY or req.same_nvlink_domain) and req.gpus > 1:
        return "any"
    return "none"


def slot(seed: str, attempt: int) -> int:
    """Where among the top candidates this request starts: stable per request, spread across requests."""
    return int.from_bytes(hashlib.blake2b(seed.encode(), digest_size=4).digest(), "big") + attempt


def accepted_models(models: list[str], req: PlacementRequest) -> list[str]:
    """The graph's GPU models (graph_facts, exact names) a request may take: its model's, or all."""
    match = req.model_match
    return [m for m in models if match is None or match.matches(m)]


def candidate_read(statement: str, hosts: int, scan_up_to: int = SCAN_EVERY_HOST_UP_TO) -> str:
    """Which of a one-host reserve statement's two forms to run (`reservations/reserve_in_host` or
    `reservations/reserve_in_host_batch`) on a cluster of this many hosts: up to `scan_up_to`, its
    `_scan` form, which reads the candidates by a scan of every host; above, the form that seeks
    them by the free-count index. Both give the same candidates and answers
    (reserve_in_host_batch_scan says why two)."""
    return f"{statement}_scan" if hosts <= scan_up_to else statement


def in_host_params(
    req: PlacementRequest,
    mode: str,
    models: list[str],
    props: dict[str, object],
    *,
    seed: str,
    attempt: int,
    now: float,
    stale_before: float | None,
) -> InHostParams:
    return InHostParams(
        first_size=req.gpus,
        last_size=MAX_HOST_GPUS,
        exclude=list(req.exclude_hosts),
        model=req.model_match.prefilter if req.model_match is not None else "",
        models=models,
        mode=mode,
        n=req.gpus,
        k=TOP_K,
        scan=SCAN_HOSTS,
        slot=slot(seed, attempt) % TOP_K,
        now=now,
        stale_before=stale_before if stale_before is not None else -1.0e18,
        props=props,
    )


class BatchRequest(TypedDict):
    """One request of reserve_in_host_batch (an element of its `$requests`)."""

    n: int
    link: int  # 0: any GPUs, 1: one NVLink domain, 2: a switched domain (full mesh)
    props: dict[str, object]


@dataclass(frozen=True)
class BatchKey:
    """What the requests of one batch statement share: the candidate hosts are read once for them."""

    models: tuple[str, ...]
    model: str
    exclude: tuple[str, ...]
    stale_after_s: float | None


@dataclass(frozen=True)
class BatchItem:
    key: BatchKey
    request: BatchRequest


LINK = {"none": 0, "any": 1, "full-mesh": 2}


def batch_item(
    req: PlacementRequest, mode: str, models: list[str], props: dict[str, object], *, stale_after_s: float | None
) -> BatchItem:
    key = BatchKey(
        models=tuple(models),
        model=req.model_match.prefilter if req.model_match is not None else "",
        exclude=tuple(sorted(req.exclude_hosts)),
        stale_after_s=stale_after_s,
    )
    return BatchItem(key, BatchRequest(n=req.gpus, link=LINK[mode], props=props))


def batch_params(key: BatchKey, requests: list[BatchRequest], now: float) -> dict[str, object]:
    """Parameters of reserve_in_host_batch. For each distinct request size it reads as many
    candidate hosts as the batch could use up (one per request, plus a few), never more than
    SCAN_HOSTS."""
    return {
        "requests": requests,
        "sizes": sorted({r["n"] for r in requests}),
        "models": list(key.models),
        "model": key.model,
        "exclude": list(key.exclude),
        "stale_before": now - key.stale_after_s if key.stale_after_s is not None else -1.0e18,
        "scan": min(SCAN_HOSTS, len(requests) + 8),
        "now": now,
    }
