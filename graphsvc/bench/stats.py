"""Seeds to numbers a reviewer accepts: mean, min-max and a 95% interval; leads only beyond the spread.

A policy's result on one cluster and trace shape is the mean over seeds (each seed a
different trace draw, or a different window of a real trace), with its min-max and a
Student-t 95% interval. Policies run on the same seeds, so two policies are compared
pairwise: the per-seed difference. A **lead** is claimed only when every seed's difference
has the same sign and the difference's 95% interval excludes zero; anything else is a
**tie within the spread**, whatever the means say (**equal** when every seed gives the same).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

# Two-sided 97.5% quantiles of Student's t by degrees of freedom (n - 1).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 29: 2.045}  # fmt: skip


def t975(dof: int) -> float:
    if dof in T975:
        return T975[dof]
    below = [k for k in T975 if k <= dof]
    return T975[max(below)] if below else math.inf


@dataclass(frozen=True)
class Spread:
    mean: float
    lo: float
    hi: float
    half95: float  # half-width of the 95% interval of the mean (inf for one value)
    n: int

    def text(self, digits: int = 1) -> str:
        """`mean [min-max]`, as the tables print it."""
        if self.n == 1:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} [{self.lo:.{digits}f}-{self.hi:.{digits}f}]"


def spread(values: list[float]) -> Spread | None:
    if not values:
        return None
    mean = statistics.fmean(values)
    half = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.inf
    return Spread(mean, min(values), max(values), half, len(values))


@dataclass(frozen=True)
class Comparison:
    verdict: str  # "lead", "behind", "tie" (within the spread) or "equal" (every seed the same)
    diff: Spread  # per-seed difference, policy minus other (in the metric's own direction)

    def text(self, digits: int = 1) -> str:
        d = self.diff
        if self.verdict == "equal":
            return f"equal ({d.n} seeds)"
        f = f".{digits}f"
        return f"{self.verdict} ({d.mean:+{f}}, 95% ±{d.half95:{f}}, seeds {d.lo:+{f}}..{d.hi:+{f}})"


def compare(ours: list[float], theirs: list[float], *, higher_is_better: bool) -> Comparison | None:
    """Paired by seed: a lead (or a deficit) only where every seed agrees and the 95% interval excludes 0."""
    if len(ours) != len(theirs) or len(ours) < 2:
        return None
    diffs = [a - b for a, b in zip(ours, theirs, strict=True)]
    d = spread(diffs)
    assert d is not None
    better = [x if higher_is_better else -x for x in diffs]
    beyond = abs(d.mean) > d.half95
    if all(x == 0 for x in diffs):
        verdict = "equal"
    elif all(x > 0 for x in better) and beyond:
        verdict = "lead"
    elif all(x < 0 for x in better) and beyond:
        verdict = "behind"
    else:
        verdict = "tie"
    return Comparison(verdict, d)
