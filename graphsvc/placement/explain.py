"""Words for placements: why a candidate ranks where it does, and why nothing fits.

Infeasibility is diagnosed by relaxing one hard constraint at a time: the constraints
whose relaxation alone makes the request feasible are the ones that failed, and the
relaxed request is the nearest feasible one. When no single relaxation helps, the
request is shrunk to the largest GPU count that fits with every constraint kept.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from graphsvc.placement.counting import Counts, FreeBounds, LeafShareBound, free_bounds
from graphsvc.placement.model import Candidate, InfeasibleReason
from graphsvc.placement.request import MAX_LIMIT, NVLinkRequirement, PlacementRequest, format_request
from graphsvc.sites.store import list_sites

if TYPE_CHECKING:
    from graphsvc.placement.engine import HostLoader, PlacementEngine

Feasible = Callable[[PlacementRequest], Awaitable[bool]]  # does a request fit (diagnose's probe)


def describe(req: PlacementRequest, c: Candidate, leftover: int) -> str:
    hosts = [h.name for h in c.hosts]
    model = c.gpus[0].model if c.gpus else "GPU"
    where = (
        f"on {hosts[0]}"
        if len(hosts) == 1
        else f"across {len(hosts)} hosts ({', '.join(hosts[:4])}{', ...' if len(hosts) > 4 else ''})"
    )
    domains = {g.nvlink_domain for g in c.gpus}
    if len(domains) == 1 and None not in domains:
        link = "all in one NVLink domain"
    elif None in domains and len(domains) == 1:
        link = "without NVLink"
    else:
        link = f"in {len(domains - {None})} NVLink domains"
    bw = f"bottleneck {c.bottleneck_gbps:g} GB/s" if c.bottleneck_gbps is not None else "a single GPU"
    hop = _hops_text(c) if len(hosts) > 1 else ""
    fit = (
        "uses every free GPU it touches (no fragment left)"
        if leftover == 0
        else f"leaves {leftover} free GPU{'s' if leftover != 1 else ''} beside it"
    )
    temps = [g.temperature_c for g in c.gpus if g.temperature_c is not None]
    heat = f" GPUs run {min(temps):g}-{max(temps):g} °C." if temps else ""
    unhealthy = [g for g in c.gpus if (g.health or "ok") not in ("ok", "unknown")]
    health = f" {len(unhealthy)} GPU(s) are not healthy." if unhealthy else " All healthy."
    return (
        f"{len(c.gpus)} free {model} {where}, {link}, {bw}{hop}. Best fit: it {fit}; "
        f"the largest free block goes from {c.largest_free_block_before} to {c.largest_free_block_after}."
        f"{heat}{health} "
        f"Facts are {c.as_of_s:.0f} s old."
    )


def _hops_text(c: Candidate) -> str:
    hops = f"{c.max_ib_hops} IB switch hop{'s' if c.max_ib_hops != 1 else ''}"
    if c.ib_hops_known:
        return f", at most {hops} between hosts"
    if c.max_ib_hops == 0:
        return ", no InfiniBand path known between its hosts"
    return f", no InfiniBand path known between some of its hosts (at most {hops} where one is)"


_RELAXATIONS: list[tuple[str, str, dict[str, object]]] = [
    ("nvlink", "the NVLink requirement", {"nvlink": NVLinkRequirement.NONE, "same_nvlink_domain": False}),
    ("maxIbHops", "the IB hop limit", {"max_ib_hops": None}),
    ("railAligned", "rail alignment", {"rail_aligned": False}),
    ("gpuNicAffinity", "GPU-NIC affinity", {"gpu_nic_affinity": False}),
    ("gpusPerHost", "the per-host split", {"gpus_per_host": None}),
    ("maxTemperatureC", "the temperature limit", {"max_temperature_c": None}),
    ("minMemoryGiB", "the memory minimum", {"min_memory_gib": None}),
    ("excludeUnhealthy", "excluding unhealthy GPUs", {"exclude_unhealthy": False}),
    ("excludeHosts", "the excluded hosts", {"exclude_hosts": ()}),
    ("sites", "the site filter", {"sites": ()}),
]


def _changes(req: PlacementRequest, changes: dict[str, object]) -> bool:
    return any(getattr(req, k) != v for k, v in changes.items())


async def diagnose(
    engine: PlacementEngine, req: PlacementRequest, loader: HostLoader | None = None
) -> list[InfeasibleReason]:
    """Why `req` has no candidate. `loader`: the hosts the failed search read, so that the
    relaxed and shrunk searches here read no host twice (they differ only in what they ask).

    The free counters bound every search (each seeks its units by them): a relaxed request
    they cannot hold is answered without a search, and the largest request that fits is
    probed from what they allow downwards, not halved from the request. A probe without
    NVLink or rail constraints and with no hop limit, one host or one leaf is answered by
    counting in the store (placement.counting), not by reading every host's GPUs (#15)."""
    under_leaves = req.rail_aligned and not await _nics_off_leaf(engine, loader)
    bounds = await free_bounds(engine, req.gpus_per_host or 1, rails_under_leaves=under_leaves)
    counts = Counts(engine, bounds)

    async def feasible(r: PlacementRequest) -> bool:
        if bounds.most(r) < r.gpus or refused_by_leaves(r, bounds, loader):
            return False
        counted = await counts.fits(r)
        if counted is not None:
            return counted
        return await engine.fits(r.with_(limit=1), loader=loader)

    reasons: list[InfeasibleReason] = []
    if req.sites:
        known = [site.name for site in await list_sites(engine.gw)]
        missing = [name for name in req.sites if name not in known]
        if missing:
            reasons.append(await _unknown_sites(req, missing, known, feasible))
            if len(missing) == len(req.sites):  # no GPU is in a site the graph does not know
                return await _with_stale(engine, reasons)
    if req.nvlink is NVLinkRequirement.FULL_MESH:
        softer = req.with_(nvlink=NVLinkRequirement.ANY)
        if await feasible(softer):
            reasons.append(
                InfeasibleReason(
                    "nvlink",
                    f"{req.gpus} GPUs are free in one NVLink domain, but no {req.gpus} of them are all directly "
                    "NVLink-connected (full mesh)",
                    format_request(softer),
                )
            )
    for field, words, changes in _RELAXATIONS:
        if not _changes(req, changes):
            continue
        relaxed = req.with_(**changes)
        if any(r.constraint == field for r in reasons):
            continue
        if await feasible(relaxed):
            reasons.append(await _relaxed_reason(engine, req, field, words, relaxed, loader))
    if req.rail_aligned and req.gpus_per_host is None and not req.needs_one_domain:
        # A probe of several hosts asks placement_leaf_holds first (PlacementEngine.fits), unless
        # NICs are cabled off leaves or its loader holds GPUs a preemption would free.
        by_leaf = under_leaves and not (loader is not None and loader.virtual_free)
        leaf_bound = LeafShareBound(engine) if by_leaf else None
        largest = await _largest_aligned(req, feasible, min(bounds.host, req.gpus), bounds.most, leaf_bound)
    elif req.rail_aligned and req.gpus_per_host is None:
        largest = await _largest_by_scan(req, feasible, bounds.most(req))
    else:
        largest = await _largest_feasible(req, feasible, bounds.most(req))
    model = req.model or "matching"
    if largest == 0 and not reasons:
        reasons.append(
            InfeasibleReason(
                "model" if req.model else "gpus",
                f"no free {model} GPU{_in_sites(req)} meets the per-GPU constraints (model, memory, health, "
                "temperature)",
                None,
            )
        )
    elif 0 < largest < req.gpus:
        shrunk = req.with_(gpus=largest, gpus_per_host=_per_host_for(req, largest))
        reasons.append(
            InfeasibleReason(
                "gpus",
                f"at most {largest} {model} GPUs fit these constraints now (asked {req.gpus})",
                format_request(shrunk),
            )
        )
    if not reasons:
        reasons.append(InfeasibleReason("gpus", f"no placement for {req.gpus} GPUs was found within the search budget"))
    return await _with_stale(engine, reasons)


async def _with_stale(engine: PlacementEngine, reasons: list[InfeasibleReason]) -> list[InfeasibleReason]:
    """The reasons, and how many silent hosts were not offered: a reason of its own, whatever else failed."""
    stale = await _stale_hosts(engine)
    if stale:
        reasons.append(
            InfeasibleReason(
                "stale",
                f"{stale} host(s) not heard from for more than {engine.stale_after_s:g} s are not offered "
                "(their collectors or network may be down)",
                None,
            )
        )
    return reasons


def _in_sites(req: PlacementRequest) -> str:
    """` in site a` / ` in sites a, b`: where a request naming sites looked."""
    if not req.sites:
        return ""
    return f" in site{'s' if len(req.sites) > 1 else ''} {', '.join(req.sites)}"


_LISTED_SITES = 10  # more known sites than this are counted, not listed


def unknown_sites_message(missing: Sequence[str], known: Sequence[str]) -> str:
    """Which asked sites the graph does not know, and which it does. Without this the answer was
    the per-GPU one (constraint `model`: "no free H100 GPU meets the per-GPU constraints"), which
    sent the caller looking at the model for a typo in a site name."""
    names = ", ".join(repr(name) for name in missing)
    said = f"no site named {names} is known" if len(missing) == 1 else f"no sites named {names} are known"
    if not known:
        return f"{said}: the graph has no sites (docs/sites.md)"
    if len(known) <= _LISTED_SITES:
        return f"{said}; known sites: {', '.join(known)}"
    return f"{said}; {len(known)} sites are known (`graphsvc sites` lists them)"


async def _unknown_sites(
    req: PlacementRequest, missing: Sequence[str], known: Sequence[str], feasible: Feasible
) -> InfeasibleReason:
    """The reason `sites` for names no site has, nearest the request with only the known ones,
    or with none when it names no known site (either only when it fits)."""
    nearer = req.with_(sites=tuple(name for name in req.sites if name not in missing))
    return InfeasibleReason(
        "sites", unknown_sites_message(missing, known), format_request(nearer) if await feasible(nearer) else None
    )


async def _relaxed_reason(
    engine: PlacementEngine,
    req: PlacementRequest,
    field: str,
    words: str,
    relaxed: PlacementRequest,
    loader: HostLoader | None,
) -> InfeasibleReason:
    """Why a constraint that alone blocks the request does: in its own words where the generic
    ones ("nothing fits with X; without it it does") leave the caller guessing what to ask."""
    if field == "sites":
        return InfeasibleReason(field, f"nothing fits{_in_sites(req)}; without the site filter it does",
                                format_request(relaxed))  # fmt: skip
    if field == "minMemoryGiB":
        # The most memory a placement offers, nearest the request with that as its minimum (a
        # candidate found has it); none when the relaxed request fitted by its counts but no search
        # found it (the budget): then the generic words.
        most = await _most_memory(engine, relaxed, loader)
        if most is not None:
            said, gib = memory_message(req, *most)
            return InfeasibleReason(field, said, format_request(req.with_(min_memory_gib=gib)))
    value = _value(req, field)
    return InfeasibleReason(field, f"nothing fits with {words}{f' ({value})' if value else ''}; without it it does",
                            format_request(relaxed))  # fmt: skip


_MEMORY_ROUNDS = 8  # more distinct GPU memory sizes than a request's other constraints leave is unheard of


async def _most_memory(
    engine: PlacementEngine, relaxed: PlacementRequest, loader: HostLoader | None
) -> tuple[int, str] | None:
    """The most memory per GPU a placement meeting every other constraint offers, as (MiB, model)
    of the candidate whose smallest GPU is largest. Each round asks for more than the last found,
    so the last round that finds a candidate found the largest (a round per memory size the
    candidates show, usually two searches: one finds, one finds nothing)."""
    best: tuple[int, str] | None = None
    ask = relaxed.with_(limit=MAX_LIMIT)
    for _ in range(_MEMORY_ROUNDS):
        found = (await engine.place(ask, explain_infeasible=False, loader=loader)).candidates
        offers = [(min(g.memory_mib or 0 for g in c.gpus), c.gpus[0].model) for c in found if c.gpus]
        if not offers:
            break
        best = max(offers)
        ask = ask.with_(min_memory_gib=(best[0] + 1) / 1024)
    return best


def memory_message(req: PlacementRequest, most_mib: int, model: str) -> tuple[str, float]:
    """The memory reason's words and the largest minimum that fits (GiB, one decimal, rounded
    down so that the GPUs named meet it). `mem>=80` ruled out the "80 GB" H100 (81,559 MiB, 79.6
    GiB), and "nothing fits with the memory minimum (80.0)" did not say what there was."""
    gib = math.floor(most_mib / 1024 * 10) / 10
    which = req.model or "GPU"
    words = (
        f"nothing fits with the memory minimum ({req.min_memory_gib:g} GiB): the largest {which} that meets the "
        f"other constraints has {gib:g} GiB ({model}, {most_mib} MiB)"
    )
    return words, gib


async def _stale_hosts(engine: PlacementEngine) -> int:
    if engine.stale_after_s is None:
        return 0
    rows = await engine.gw.read("stale_hosts_count", {"cutoff": engine.clock() - engine.stale_after_s})
    return int(rows[0]["stale"]) if rows else 0


SHOWN_HOSTS = 5  # excluded hosts named in a reason; the rest counted


def _value(req: PlacementRequest, field: str) -> str:
    attr = {
        "nvlink": "nvlink", "maxIbHops": "max_ib_hops", "railAligned": "rail_aligned",
        "gpuNicAffinity": "gpu_nic_affinity", "gpusPerHost": "gpus_per_host",
        "maxTemperatureC": "max_temperature_c", "minMemoryGiB": "min_memory_gib",
        "excludeUnhealthy": "exclude_unhealthy", "excludeHosts": "exclude_hosts",
    }[field]  # fmt: skip
    value = getattr(req, attr)
    if field == "minMemoryGiB":
        return f"{value:g} GiB"
    if isinstance(value, bool):
        return ""  # "rail alignment (True)" said nothing the words do not
    if isinstance(value, tuple):  # hosts: a Python tuple's repr, and every one of up to 1,000
        shown = ", ".join(value[:SHOWN_HOSTS])
        return shown + (f" and {len(value) - SHOWN_HOSTS} more" if len(value) > SHOWN_HOSTS else "")
    return value.value if isinstance(value, NVLinkRequirement) else str(value)


async def _nics_off_leaf(engine: PlacementEngine, loader: HostLoader | None) -> bool:
    """Whether any NIC is cabled to a switch that keeps no free counter (the failed search's
    answer when it read it)."""
    if loader is not None:
        return await loader.off_leaf()
    return bool(await engine.gw.read("placement_nics_off_leaf", {}))


def refused_by_leaves(req: PlacementRequest, bounds: FreeBounds, loader: HostLoader | None) -> bool:
    """Whether the probe `engine.fits(req, loader=loader)` is sure to find nothing by what this
    request read already, so that it need not run: a rail-aligned request the failed search's
    loader has asked placement_leaf_holds about (the same count and share: the cache `fits` reads
    through) with no leaf holding it and no NIC cabled off a leaf, that no host holds alone.

    Why that is `fits`' answer: with that loader (the same sites, no preemption plan) its searches
    are `run`'s: the leaves-first path and search_multi_host both ask `aligned_may_fit`, the same
    cached False, and read no leaf or wider group; search_hosts (also each model's, and only for
    an unsplit share or one of the whole request) seeks hosts whose free counter holds the whole
    request, and the fullest counter (`bounds.host`, read this diagnosis) does not: it finds none.
    Left to `fits`: preferred hosts (searched whatever their counters say), one-domain requests
    (their own search), a MIG profile. Ending lapsed leases is not asked for again: `place` ended
    them just before the diagnosis, as the counter bounds above (`bounds.most`) also assume.
    `251xH100 rail-aligned` without GPU-NIC affinity (its relaxation) ran the one-host statement
    and the lapsed-lease check to learn this (docs/benchmarks.md, #15)."""
    if loader is None or not req.rail_aligned or loader.virtual_free or loader.sites != req.site_set:
        return False
    if req.prefer_hosts or req.needs_one_domain or req.mig_profile is not None:
        return False
    if loader.leaf_held.get((req.gpus, req.gpus_per_host or 0)) is not False or loader.nics_off_leaf is not False:
        return False
    return req.gpus_per_host not in (None, req.gpus) or bounds.host < req.gpus


def _per_host_for(req: PlacementRequest, n: int) -> int | None:
    if req.gpus_per_host is None:
        return None
    return req.gpus_per_host if n % req.gpus_per_host == 0 else None


async def _largest_feasible(req: PlacementRequest, feasible, most: int) -> int:  # type: ignore[no-untyped-def]
    """The largest GPU count that fits with every other constraint kept (per-host counts step by
    the split). Probed from `most` (what the counters allow) down: usually the first probe fits,
    or one a few GPUs below it (degraded or hot GPUs the counters count), so the step down
    doubles from 1 and a binary search finishes between the last two probes. Each probe is a
    search, and large failing ones cost the most: this asks far fewer than halving from the
    request did (14 probes for 2000 GPUs under one leaf)."""
    step = req.gpus_per_host or 1
    fits, fails = 0, min((req.gpus - 1) // step, most // step) + 1  # in steps of `step`
    probe, drop = fails - 1, 1
    while probe > fits:
        if await feasible(req.with_(gpus=probe * step)):
            fits = probe
            break
        fails, probe, drop = probe, probe - drop, drop * 2
    while fails - fits > 1:
        mid = (fits + fails) // 2
        if await feasible(req.with_(gpus=mid * step)):
            fits = mid
        else:
            fails = mid
    return fits * step


async def _largest_by_scan(req: PlacementRequest, feasible: Feasible, most: int) -> int:
    """The largest count below the request's that fits, each count tried from `most` (the fullest
    NVLink domain's free counter: 72 at most on an NVL72 rack) down. For an unsplit rail-aligned
    set that must share one domain: counts do not shrink monotonically (trays with 4, 8 and 12
    GPUs of rails {0, 3} free, 5 of none: 6 fit where 5 does not, and halving said 4; a probe's
    case), and a per-host probe (_largest_aligned) would ask each tray's share to share the
    domain, not the whole set. One domain search a probe, at most `most` of them."""
    for n in range(min(req.gpus - 1, most), 0, -1):
        if await feasible(req.with_(gpus=n)):
            return n
    return 0


async def _largest_aligned(
    req: PlacementRequest,
    feasible: Feasible,
    top: int,
    allowed: Callable[[PlacementRequest], int],
    leaf_bound: LeafShareBound | None = None,
) -> int:
    """The largest count below the request's that an unsplit rail-aligned request fits, where
    `top` is the most GPUs one host holds free. Such a set is the same share p on each of k hosts
    (placement.rails), so counts do not shrink monotonically (251 GPUs fit no even split where
    256 fit 32 hosts x 8): a search over the count halves wrongly. For one share, fewer hosts fit
    whenever more do, so each share p is searched by its host count, upwards from the count that
    would beat the best found (a share that cannot is one failing probe), doubling and then
    halving: at most `top` probes more than two searches of the host count, every probe smaller
    than the last that failed. Not for a request whose whole set must share one NVLink domain:
    a per-host probe asks each host's share to, not the whole set.

    `allowed` is what the free counters allow a request (FreeBounds.most): a share that can beat
    the best found next probes the most hosts they allow, and where that fits (no degraded or
    hot GPU among the fullest units) it needs no other probe. `251xH100 rail-aligned` at 8,192
    GPUs probed 31 hosts x 8 after 1, 2, 4, 8, 16, 24, 28 and 30 hosts; each large probe is a
    wide search. Where the most do not fit, one probe more than before.

    `leaf_bound` (where every probe of several hosts asks placement_leaf_holds first): a share
    that must beat the best found on several hosts is bounded by the most hosts a leaf's counters
    give it, all shares from one statement (placement_leaf_shares), where each probe of a share no
    leaf holds was a statement scanning every leaf (`251xH100 rail-aligned`: 250 = 50 x 5,
    249 = 83 x 3, 250 = 125 x 2, 249 x 1 on 32-host units). It answers what those probes did:
    LeafShares.most_hosts is placement_leaf_holds's answer for each host count. Where the leaves'
    NICs (placement_leaf_nics, no host read) already allow fewer than `least` hosts, no leaf's
    hosts are read at all (LeafShareBound)."""
    best = 0
    for p in range(top, 0, -1):
        least, most = best // p + 1, (req.gpus - 1) // p
        most = min(most, allowed(req.with_(gpus=max(most, 1) * p, gpus_per_host=p)) // p)
        if leaf_bound is not None and 2 <= least <= most:  # several hosts: every probe asks the leaves
            most = min(most, await leaf_bound.most_hosts(p, least_leaf=best + 1, least=least))
        if least > most or not await feasible(req.with_(gpus=least * p, gpus_per_host=p)):
            continue
        if most > least:
            if await feasible(req.with_(gpus=most * p, gpus_per_host=p)):
                best = most * p
                continue
            most -= 1
        fits, fails, step = least, most + 1, 1
        while fits + step < fails:
            if not await feasible(req.with_(gpus=(fits + step) * p, gpus_per_host=p)):
                fails = fits + step
                break
            fits, step = fits + step, step * 2
        while fails - fits > 1:
            mid = (fits + fails) // 2
            if await feasible(req.with_(gpus=mid * p, gpus_per_host=p)):
                fits = mid
            else:
                fails = mid
        best = fits * p
    return best
