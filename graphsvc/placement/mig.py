"""Which MIG slices to hand out: a pure function over the free slices of one profile.

A job asking for `n` slices of a profile (`2x 3g.40gb`) runs best when its slices share a GPU
(they share its memory system and need no PCIe or network between them), next best when
they share a host, and only then across hosts. So candidates come from the best of three
tiers that has any:

1. **one GPU**: every GPU with at least `n` free slices of the profile is a candidate. The
   GPU with the fewest such free slices comes first (best fit: a GPU with more room stays
   whole for a bigger request), then preferred hosts, then host name and GPU index.
2. **one host**: every host whose GPUs together have `n`. It takes from the GPUs with the
   most free slices first, so it uses as few GPUs as it can; hosts using fewer GPUs come
   first, then the host with the fewest free slices (best fit), preferred hosts, name.
3. **several hosts**: one candidate, hosts with the most free slices first (as few hosts as
   can hold the job), each host's GPUs as in tier 2.

Within a GPU, slices go in GPU instance id order. A MIG-enabled GPU is never offered whole
(`select.py`); a slice is offered only as a slice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class SliceScope(StrEnum):
    """How close a candidate's slices are: the tier it came from."""

    GPU = "gpu"
    HOST = "host"
    HOSTS = "hosts"


@dataclass(frozen=True)
class FreeSlice:
    """A free MIG slice with where it is (a row of placement_mig_slices)."""

    uuid: str
    profile: str
    gpu_instance_id: int
    memory_mib: int | None
    gpu: str
    gpu_index: int
    gpu_model: str
    host: str


@dataclass(frozen=True)
class SliceCandidate:
    slices: tuple[FreeSlice, ...]
    scope: SliceScope
    reason: str

    @property
    def gpus(self) -> list[str]:
        return sorted({s.gpu for s in self.slices})

    @property
    def hosts(self) -> list[str]:
        return sorted({s.host for s in self.slices})


def choose_slices(
    free: Sequence[FreeSlice], count: int, *, limit: int = 3, prefer_hosts: Sequence[str] = ()
) -> list[SliceCandidate]:
    """Up to `limit` candidates of `count` slices each, from the best tier that has any (module doc)."""
    if count < 1 or len(free) < count:
        return []
    preferred = set(prefer_hosts)
    by_gpu: dict[str, list[FreeSlice]] = defaultdict(list)
    for s in sorted(free, key=lambda s: (s.host, s.gpu_index, s.gpu_instance_id, s.uuid)):
        by_gpu[s.gpu].append(s)
    by_host: dict[str, list[list[FreeSlice]]] = defaultdict(list)
    for slices in by_gpu.values():
        by_host[slices[0].host].append(slices)

    def pref(host: str) -> int:
        return 0 if host in preferred else 1

    one_gpu = sorted(
        (slices for slices in by_gpu.values() if len(slices) >= count),
        key=lambda ss: (len(ss), pref(ss[0].host), ss[0].host, ss[0].gpu_index),
    )
    if one_gpu:
        return [
            SliceCandidate(
                tuple(ss[:count]),
                SliceScope.GPU,
                f"all {count} on GPU {ss[0].gpu_index} of {ss[0].host} ({len(ss)} free there)",
            )
            for ss in one_gpu[:limit]
        ]
    hosts: list[tuple[tuple[int, int, int, str], list[FreeSlice], int]] = []
    for host, gpus in by_host.items():
        taken = _take(gpus, count)
        if taken is not None:
            used = len({s.gpu for s in taken})
            total = sum(len(ss) for ss in gpus)
            hosts.append(((used, total, pref(host), host), taken, used))
    if hosts:
        hosts.sort(key=lambda h: h[0])
        return [
            SliceCandidate(tuple(taken), SliceScope.HOST, f"all {count} on {key[3]}, across {used} GPUs")
            for key, taken, used in hosts[:limit]
        ]
    order = sorted(by_host, key=lambda h: (-sum(len(ss) for ss in by_host[h]), pref(h), h))
    chosen: list[FreeSlice] = []
    for host in order:
        chosen += _take(by_host[host], count - len(chosen), partial=True) or []
        if len(chosen) == count:
            break
    spanned = len({s.host for s in chosen})
    return [SliceCandidate(tuple(chosen), SliceScope.HOSTS, f"no host has {count} free; across {spanned} hosts")]


def _take(gpus: list[list[FreeSlice]], count: int, *, partial: bool = False) -> list[FreeSlice] | None:
    """`count` slices from these GPUs (one host's), fullest GPUs first; None if they lack them."""
    out: list[FreeSlice] = []
    for slices in sorted(gpus, key=lambda ss: (-len(ss), ss[0].gpu_index)):
        out += slices[: count - len(out)]
        if len(out) == count:
            return out
    return out if partial else None
