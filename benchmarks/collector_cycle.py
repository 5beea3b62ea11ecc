"""Benchmark: CPU time and peak memory of one collector cycle (not a test: it only measures).

Runs N full cycles (NVML answers replayed from a recording, since this machine has no
GPU; the real sysfs of this machine through pyudev) and the import of each fixture
file, and writes docs/benchmarks/collector.json. Run: python benchmarks/collector_cycle.py
"""

from __future__ import annotations

import json
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from topo_collector.collect import build_host_facts
from topo_collector.importers import ImportOptions, import_file
from topo_collector.nvml import read_metrics, read_nvml
from topo_collector.nvml_api import ReplayNvml
from topo_collector.sysfs import read_sysfs

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "tests" / "fixtures" / "nvml"
TOPOLOGY = ROOT / "tests" / "fixtures" / "topology"


def measure(fn, runs: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    cpu: list[float] = []
    peaks: list[int] = []
    for _ in range(runs):
        tracemalloc.start()
        start = time.process_time()
        fn()
        cpu.append(time.process_time() - start)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return {
        "cpu_ms_median": round(statistics.median(cpu) * 1000, 3),
        "cpu_ms_max": round(max(cpu) * 1000, 3),
        "peak_python_kib": round(max(peaks) / 1024, 1),
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    results: dict[str, object] = {
        "machine": f"{platform.machine()} python {platform.python_version()}",
        "runs": runs,
    }
    for name in ("hgx-h100", "gb200-tray"):
        nv = ReplayNvml.load(RECORDINGS / f"{name}.json")
        results[f"full cycle ({name} NVML replay + real sysfs)"] = measure(
            lambda nv=nv: build_host_facts("bench", read_nvml(nv), read_sysfs()).model_dump_json(), runs
        )
        results[f"metrics cycle ({name})"] = measure(lambda nv=nv: read_metrics(nv), runs)
    results["sysfs only (pyudev)"] = measure(read_sysfs, runs)
    for f in sorted(TOPOLOGY.glob("*.*")):
        if f.suffix in (".xml", ".txt"):
            results[f"import {f.name}"] = measure(lambda f=f: import_file(f, ImportOptions(host="bench")), runs)
    results["process max RSS MiB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out = ROOT / "docs" / "benchmarks" / "collector.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    for key, value in results.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
