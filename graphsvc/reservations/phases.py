"""Phase plans: a job says its phases and their shapes; the service says whether the next fits.

A training run moves through phases of known sizes (a small warm-up, the main run, a
larger long-context phase, a small evaluation). With the plan on the reservation
(`phases`: "label=request" strings, `phase`: the current label), the service can answer,
before the job asks to grow, whether the next phase will fit in place and on which GPUs
(the same layout-keeping choice `resize` would make now; nothing is held for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphsvc.placement.request import PlacementRequest, RequestError, format_request, parse_request
from graphsvc.reservations.layout import plan_grow
from graphsvc.reservations.resize import ElasticService, Live
from graphsvc.reservations.service import LeaseExpired, NotFound, ValidationError

MAX_PHASES = 64


@dataclass
class PhaseFit:
    phase: str | None  # the current label
    next_phase: str | None  # None: the plan has no later phase
    request: str | None
    fits: bool
    gpus_now: int
    gpus_next: int
    add: list[str] = field(default_factory=list)  # where it would grow, if it grows
    layout_kept: bool = True
    reason: str = ""


def parse_phase(text: str) -> tuple[str, int, str]:
    """'label=request' -> (label, GPU count, request text). A phase grows or shrinks the job in
    place, on free GPUs of its model near it (resize), so its request gives a count and at most
    a model: `mem>=`, `site=` and the like were accepted and ignored, and a next phase the job
    could not take was said to fit (a probe's case)."""
    label, request = _split(text)
    req = parse_request(request).validated()
    if not _in_place(req):
        raise RequestError(
            "phases",
            f"{text[:80]!r}: a phase resizes the job in place, on GPUs of its model near it; give its GPU "
            "count and at most its model (e.g. main=16xH100)",
        )
    return label, req.gpus, request


def _in_place(req: PlacementRequest) -> bool:
    """Whether a resize in place can honour the request: it asks a count and at most a model."""
    return format_request(req) == format_request(PlacementRequest(gpus=req.gpus, model=req.model))


def _split(text: str) -> tuple[str, str]:
    label, eq, request = text.partition("=")
    if not eq or not label or len(label) > 64 or any(ord(c) < 0x20 for c in text):
        raise RequestError("phases", f"{text[:80]!r}: expected label=request, e.g. warmup=8xH100")
    return label, request


def _stored_phase(text: str) -> tuple[str, PlacementRequest, str]:
    """A phase as stored: a plan set before parse_phase refused other constraints may hold some."""
    label, request = _split(text)
    return label, parse_request(request).validated(), request


async def set_phases(
    elastic: ElasticService, reservation_id: str, phase: str, phases: list[str]
) -> ValidationError | None:
    if len(phases) > MAX_PHASES:
        return ValidationError("phases", f"at most {MAX_PHASES} phases")
    try:
        labels = [parse_phase(p)[0] for p in phases]
    except RequestError as err:
        return ValidationError(err.field, err.message)
    if len(set(labels)) != len(labels):
        return ValidationError("phases", "each phase label at most once: a second one of a name could never be reached")
    if phase not in labels:
        return ValidationError("phase", f"{phase!r} is not one of the plan's phases")
    rows = await elastic.gw.write("reservations/set_phases", {"id": reservation_id, "phase": phase, "phases": phases})
    return None if rows else ValidationError("id", "no live reservation with this id")


async def next_phase(elastic: ElasticService, reservation_id: str) -> PhaseFit | NotFound | LeaseExpired:
    live = await elastic.live(reservation_id)
    if not isinstance(live, Live):
        return live
    phase = live.props.get("phase")
    plan = [_stored_phase(p) for p in live.props.get("phases") or []]
    now = len(live.slots)
    labels = [p[0] for p in plan]
    at = labels.index(phase) if phase in labels else -1
    if at + 1 >= len(plan):
        return PhaseFit(phase, None, None, True, now, now, reason="no later phase in the plan")
    label, req, request = plan[at + 1]
    want = req.gpus
    models = sorted({g.model for g in live.reservation.gpus if g.held})
    match = req.model_match
    if match is not None and not all(match.matches(m) for m in models):
        return PhaseFit(phase, label, request, False, now, want, reason=f"the job's GPUs are {', '.join(models)}")
    if not _in_place(req):
        return PhaseFit(phase, label, request, False, now, want, reason="a resize in place keeps only count and model")
    if want <= now:
        return PhaseFit(phase, label, request, True, now, want, reason="shrinks in place (or stays)")
    pool, fits = await elastic.pool(live, elastic.rs.clock())
    grow = plan_grow(live.slots, pool, want - now, keep_layout=False, fits=fits)
    if grow is None:
        return PhaseFit(
            phase, label, request, False, now, want, reason=f"{want - now} more GPU(s) are not free near it"
        )
    return PhaseFit(phase, label, request, True, now, want, grow.uuids, grow.layout_kept, grow.reason)
