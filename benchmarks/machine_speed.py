"""A fixed reference workload timed beside each benchmark, so that hours can be compared (not a test).

Why: these benchmarks run on shared 2-core machines whose speed changes from hour to hour. At
stop 66 the same tree (and stop 58's, side by side) ran the reservation benchmark at ~530/s where
stop 58 had measured ~1,100/s, every process spending about twice the CPU per cycle: the machine,
not the code. Side-by-side runs give ratios within one hour; this figure says how fast the hour
was, so a number from another hour can be read against it. It times a fixed pure-Python loop
(the interpreter's speed, which the service's per-request CPU follows) and a JSON round trip of
a fixed document (allocation and C code, closer to what the store does), each the best of
`repeats` runs in milliseconds: the best, because a run that another process interrupted says
nothing about the machine's speed.
"""

from __future__ import annotations

import json
import time

_DOCUMENT = {
    "host": "node-0001",
    "gpus": [{"uuid": f"GPU-{i:04d}", "index": i, "state": "free", "memory_mib": 81559} for i in range(64)],
}


def _loop() -> None:
    total = 0
    for i in range(1_000_000):
        total += i & 7


def _json() -> None:
    for _ in range(200):
        json.loads(json.dumps(_DOCUMENT))


def reference_ms(repeats: int = 5) -> dict[str, float]:
    """{"loop_ms": ..., "json_ms": ...}: the best of `repeats` timings of each fixed workload."""
    out = {}
    for name, work in (("loop_ms", _loop), ("json_ms", _json)):
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - start)
        out[name] = round(best * 1000, 1)
    return out


if __name__ == "__main__":
    print(json.dumps(reference_ms()))
