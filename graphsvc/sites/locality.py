"""Placement and sites: hosts are grouped by site so no placement spans two, unless the request
allows it; then the candidate names the inter-site link and its per-GPU share as its bottleneck.

The engine (graphsvc/placement/engine.py) calls these few functions; the rules live here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from graphsvc.placement.model import Candidate, Gpu, Host, InterSite
from graphsvc.placement.request import PlacementRequest
from graphsvc.sites.model import SiteLink
from graphsvc.sites.store import site_links
from graphsvc.store.gateway import Gateway

OTHER_SITE = "other-site"  # the state a GPU outside the request's sites is given: never eligible


def site_key(host: Host, req: PlacementRequest) -> tuple[str, str] | None:
    """The part of a group key that keeps sites apart, and clusters within a site (one group for
    all when spanning sites is allowed). A cluster is one fabric import: no cable or switch joins
    two clusters' fabrics (a switch is in one cluster's fabric, a NIC has one cable), so a set
    across two clusters of a site had no InfiniBand path between its halves (a probe's case)."""
    return None if req.cross_site else (host.site or "", host.cluster or "")


def spans_sites(gpus: Iterable[Gpu], hosts: Mapping[str, Host]) -> bool:
    """Whether these GPUs sit in more than one site (a host of no site is a place of its own)."""
    return len({hosts[g.host].site if g.host in hosts else None for g in gpus}) > 1


def outside(site: str | None, allowed: frozenset[str]) -> bool:
    return bool(allowed) and site not in allowed


def inter_site(counts: Mapping[str, int], links: list[SiteLink]) -> InterSite:
    """The slowest inter-site link a placement crosses, shared by the GPUs of the smaller side.

    With GPUs in sites A and B, each GPU of the smaller side exchanges its share over the A-B
    link at once (as each GPU's NIC does inside a site): per-GPU GB/s = link / smaller side.
    """
    names = sorted(counts)
    worst: InterSite | None = None
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            link = next((x for x in links if x.joins(a, b)), None)
            if link is None:
                return InterSite(
                    sites=names,
                    link=f"{a}<->{b}",
                    bandwidth_gbps=None,
                    latency_ms=None,
                    per_gpu_gbps=None,
                    missing=f"no link between sites {a} and {b} is known",
                )
            share = link.bandwidth_gbps / min(counts[a], counts[b])
            if worst is None or share < (worst.per_gpu_gbps or 0.0):
                worst = InterSite(names, f"{a}<->{b}", link.bandwidth_gbps, link.latency_ms, share)
    assert worst is not None
    return worst


async def annotate(gw: Gateway, candidates: list[Candidate]) -> None:
    """Candidates spanning sites: the inter-site link becomes their bottleneck, and their reason says so."""
    spanning = [c for c in candidates if len({h.site for h in c.hosts}) > 1]
    if not spanning:
        return
    links = await site_links(gw)
    for c in spanning:
        counts = Counter(
            next((h.site or "(no site)" for h in c.hosts if h.name == g.host), "(no site)") for g in c.gpus
        )
        info = inter_site(counts, links)
        c.inter_site = info
        if info.per_gpu_gbps is None:
            c.reason += f"; spans sites {' + '.join(info.sites)}: {info.missing}, so its bandwidth is unknown"
            continue
        if c.bottleneck_gbps is None or info.per_gpu_gbps < c.bottleneck_gbps:
            c.bottleneck_gbps = round(info.per_gpu_gbps, 3)
        split = " + ".join(f"{s} ({counts[s]} GPUs)" for s in info.sites)
        c.reason += (
            f"; spans sites {split}: the {info.link} link ({info.bandwidth_gbps:g} GB/s, {info.latency_ms:g} ms) "
            f"is the bottleneck, {info.per_gpu_gbps:.3g} GB/s per GPU"
        )
