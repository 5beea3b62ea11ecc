"""Placement of MIG slices against the store: read the free slices of a profile, then choose.

The choice is `placement.mig.choose_slices` (pure, table-tested); this module reads its input
(`placement_mig_slices`), applies the request's hard filters on the parent GPU (model, health,
excluded and stale hosts) and checks the profile exists: one named in the driver's tables
(`topo_facts.mig.KNOWN_PROFILES`) or reported by a collector. An unknown profile is a
`RequestError` on `migProfile`, which reserve answers as a typed ValidationError.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from topo_facts.mig import KNOWN_PROFILES

from graphsvc.placement.mig import FreeSlice, SliceCandidate, choose_slices
from graphsvc.placement.model import InfeasibleReason
from graphsvc.placement.request import PlacementRequest, RequestError
from graphsvc.placement.select import UNHEALTHY
from graphsvc.store.gateway import Gateway


@dataclass
class SlicePlacement:
    candidates: list[SliceCandidate]
    infeasible: list[InfeasibleReason]
    searched: int  # free slices of the profile read


async def place_slices(
    gw: Gateway, req: PlacementRequest, *, now: float | None = None, stale_after_s: float | None = None
) -> SlicePlacement:
    """Ranked slice candidates for a MIG request; raises RequestError for an unknown profile."""
    assert req.mig_profile is not None
    now = time.time() if now is None else now
    profile = req.mig_profile
    profiles: dict[str, tuple[int, int]] = {}
    if profile not in KNOWN_PROFILES:  # a profile the driver tables lack is known if a collector reported it
        profiles = await _profiles(gw, now)
        if profile not in profiles:
            known = sorted(set(profiles) or KNOWN_PROFILES, key=lambda p: (int(p.split("g.")[0]), len(p), p))
            raise RequestError("migProfile", f"unknown MIG profile {profile!r}; known: {', '.join(known)}")
    rows = await gw.read("placement_mig_slices", {"profile": profile, "now": now, "exclude": list(req.exclude_hosts)})
    stale_before = now - stale_after_s if stale_after_s is not None else None
    free = [
        FreeSlice(
            uuid=str(r["uuid"]),
            profile=str(r["profile"]),
            gpu_instance_id=int(r["gpu_instance_id"] or 0),
            memory_mib=r["memory_mib"],
            gpu=str(r["gpu"]),
            gpu_index=int(r["gpu_index"]),
            gpu_model=str(r["gpu_model"]),
            host=str(r["host"]),
        )
        for r in rows
        if (req.model_match is None or req.model_match.matches(str(r["gpu_model"])))
        and not (req.exclude_unhealthy and str(r["health"] or "").lower() in UNHEALTHY)
        and not (stale_before is not None and r["received_at"] is not None and r["received_at"] < stale_before)
    ]
    candidates = choose_slices(free, req.gpus, limit=req.limit, prefer_hosts=req.prefer_hosts)
    infeasible = []
    if not candidates:
        total, _ = (profiles or await _profiles(gw, now)).get(profile, (0, 0))
        infeasible.append(
            InfeasibleReason(
                "migProfile",
                f"{req.gpus} free {profile} slice(s) asked, {len(free)} free that fit the request "
                f"({total} {profile} slice(s) in the cluster)",
                nearest_feasible=f"{len(free)}x {profile}" if free else None,
            )
        )
    return SlicePlacement(candidates, infeasible, len(rows))


async def _profiles(gw: Gateway, now: float) -> dict[str, tuple[int, int]]:
    """Every reported profile: (slices, free). A scan of all slices, so read only when needed."""
    rows = await gw.read("mig_profiles", {"now": now})
    return {str(r["profile"]): (int(r["slices"]), int(r["free"])) for r in rows}
