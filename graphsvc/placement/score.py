"""How candidates are ranked and scored: one named weight set and one ordering rule, pure data in.

Kueue-style: the facts a ranking needs about one candidate are plain numbers (`Facts`), the
weights are one named, frozen set (`WEIGHTS`), and the order is a tuple key compared
lexicographically, so every tie-break is a line of `sort_key` with a table test
(tests/unit/test_score.py), runnable without a store.

The order (highest first):

1. **Preferred hosts** (the share of the candidate's hosts the request prefers).
2. Requests that **name a model** (all candidates are that model): **best fit** (the share of
   the touched units' free GPUs the candidate uses; 1.0 leaves no fragment), then
   **bottleneck bandwidth**, then **health**, then **error-freeness** (the named error
   penalties below), then **temperature** (only when the request asks for cool GPUs), then
   **idleness** (live utilisation reported by the collectors: load from outside the service's
   reservations slows a job sharing the GPU).
3. Requests that **name no model** (a heterogeneous cluster may offer H100 boards, an NVL72
   rack and A100 bridged pairs to the same request): the **best bandwidth available, unless
   taking it would cost a larger job its place**. A candidate that keeps the cluster's
   largest free block intact ranks above one that shrinks it (the largest block is the only
   place the largest waiting job can go); among those, higher bandwidth first, then fit,
   health, error-freeness, temperature. `choice_note` says in words which way the rule went.

`score` (0-100, shown to callers, never used to order) weighs the same facts with `WEIGHTS`.

**Error penalties** (#17), each a named weight times the share of the candidate's GPUs it
touches, subtracted from the score and from error-freeness in the order:
- `nvlink_errors`: GPUs whose NVLink replay, recovery or CRC counters are non-zero (a flaky
  link retransmits: collective bandwidth drops before anything fails);
- `xid_errors`: GPUs on which the collector saw a critical XID (the codes that fail or degrade
  a GPU also set its health; the others, application faults, still hint at trouble);
- `nic_errors`: GPUs whose nearest NIC port counts symbol, link-downed or receive errors,
  for multi-host candidates only (a single host's job does not cross the NIC).
"""

from __future__ import annotations

from dataclasses import dataclass

# GB/s per GPU of the fastest NVLink in the domain primer (GB200 NVL72, 18 NVLink5 links):
# bandwidth is scored as a share of it, so a faster link always scores higher up to this ceiling.
BANDWIDTH_CEILING_GBPS = 1800.0


@dataclass(frozen=True)
class Weights:
    """The score's weight set; the weights sum to 1 so `score` is 0-100."""

    fit: float = 0.5  # best fit: fragments left beside a job are the costliest thing to undo
    bandwidth: float = 0.3  # bottleneck GB/s as a share of BANDWIDTH_CEILING_GBPS
    health_cool: float = 0.1  # healthy share x coolness (1 - mean °C / 100)
    preferred: float = 0.1  # share of hosts the request prefers
    bandwidth_ceiling_gbps: float = BANDWIDTH_CEILING_GBPS
    # Penalties (subtracted; not part of the sum to 1): see "Error penalties" above.
    nvlink_errors: float = 0.05  # x share of GPUs with NVLink replay/recovery/CRC errors
    xid_errors: float = 0.1  # x share of GPUs with a critical XID seen
    nic_errors: float = 0.05  # x share of GPUs whose nearest NIC port counts errors (multi-host)


WEIGHTS = Weights()
UNKNOWN_TEMPERATURE_COOL = 0.5  # no temperature reported: neither cool nor hot


@dataclass(frozen=True)
class Facts:
    """What ranking knows about one candidate (all derived from the graph before scoring)."""

    fit: float  # 0..1, 1.0 uses every free GPU of the units it touches (SPREAD requests: inverted)
    bottleneck_gbps: float | None  # None: a single GPU (no link to rate)
    healthy: float  # share of the candidate's GPUs whose health is ok
    cool: float  # 0..1, 1 - mean temperature / 100
    preferred: float  # share of the candidate's hosts the request prefers
    largest_before: int  # the cluster's largest free block (GPUs in one host or NVLink domain)
    largest_after: int  # ... if this candidate were taken
    idle: float = 1.0  # 0..1, 1 - mean utilisation / 100 (load outside the service's reservations)
    nvlink_errors: float = 0.0  # 0..1, share of GPUs with NVLink errors counted
    xid_errors: float = 0.0  # 0..1, share of GPUs with a critical XID seen
    nic_errors: float = 0.0  # 0..1, share of GPUs whose nearest NIC counts errors (multi-host only)


def bandwidth_share(gbps: float | None, weights: Weights = WEIGHTS) -> float:
    """A single GPU needs no link: full marks; otherwise the share of the ceiling, capped at 1."""
    if gbps is None:
        return 1.0
    return min(1.0, max(0.0, gbps) / weights.bandwidth_ceiling_gbps)


def coolness(temperatures: list[float]) -> float:
    if not temperatures:
        return UNKNOWN_TEMPERATURE_COOL
    return 1.0 - sum(temperatures) / len(temperatures) / 100.0


def idleness(utilizations: list[float]) -> float:
    """1 - mean utilisation / 100; no utilisation reported counts as idle."""
    if not utilizations:
        return 1.0
    return 1.0 - min(100.0, sum(utilizations) / len(utilizations)) / 100.0


def error_penalty(f: Facts, weights: Weights = WEIGHTS) -> float:
    """The named error weights times their shares (0 for a candidate with no error counted)."""
    return (
        weights.nvlink_errors * f.nvlink_errors + weights.xid_errors * f.xid_errors + weights.nic_errors * f.nic_errors
    )


def keeps_largest_block(f: Facts) -> bool:
    return f.largest_after >= f.largest_before


def score(f: Facts, weights: Weights = WEIGHTS) -> float:
    """0-100 for display: the weighted sum of the facts."""
    total = (
        weights.fit * f.fit
        + weights.bandwidth * bandwidth_share(f.bottleneck_gbps, weights)
        + weights.health_cool * f.healthy * f.cool
        + weights.preferred * f.preferred
    )
    return round(100 * max(0.0, total - error_penalty(f, weights)), 2)


def sort_key(f: Facts, *, names_model: bool, cooler_gpus: bool) -> tuple[float, ...]:
    """The ranking key, compared highest first (see the module docstring for the order)."""
    bw = round(bandwidth_share(f.bottleneck_gbps), 4)
    fit = round(f.fit, 4)
    cool = round(f.cool, 4) if cooler_gpus else 0.0
    idle = round(f.idle, 4)  # last: a GPU someone else is computing on is slower for this job
    clean = -round(error_penalty(f), 4)  # error-freeness: after health, before temperature
    if names_model:
        return (f.preferred, fit, bw, f.healthy, clean, cool, idle)
    return (f.preferred, 1.0 if keeps_largest_block(f) else 0.0, bw, fit, f.healthy, clean, cool, idle)


def choice_note(chosen: Facts, others: list[Facts], *, names_model: bool) -> str:
    """One sentence on the bandwidth rule for the top candidate of a model-less request ('' if moot)."""
    if names_model or chosen.bottleneck_gbps is None:
        return ""
    faster = [o for o in others if o.bottleneck_gbps is not None and o.bottleneck_gbps > chosen.bottleneck_gbps]
    if not faster:
        slower = [o for o in others if o.bottleneck_gbps is not None and o.bottleneck_gbps < chosen.bottleneck_gbps]
        return (
            f" Best bandwidth available ({chosen.bottleneck_gbps:g} GB/s; other candidates down to "
            f"{min(o.bottleneck_gbps or 0.0 for o in slower):g})."
            if slower
            else ""
        )
    best = max(faster, key=lambda o: o.bottleneck_gbps or 0.0)
    if keeps_largest_block(chosen) and not keeps_largest_block(best):
        return (
            f" Not the best bandwidth available: {best.bottleneck_gbps:g} GB/s was free, but taking it would "
            f"shrink the largest free block from {best.largest_before} to {best.largest_after} GPUs and cost a "
            f"larger job its place; this one keeps it at {chosen.largest_after}."
        )
    if chosen.preferred > best.preferred:
        return f" A faster placement ({best.bottleneck_gbps:g} GB/s) exists off the preferred hosts."
    return ""
