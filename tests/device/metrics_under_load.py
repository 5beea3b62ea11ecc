"""Do the collector's GPU readings follow a real load? Run on a lent GPU machine (not in pytest).

    python tests/device/metrics_under_load.py OUT_DIR

Samples `read_metrics` against real NVML every 0.5 s: 5 s idle, ~20 s while a PyTorch matmul
loop keeps the GPU busy (the device image has torch), 8 s after. Writes OUT_DIR/metrics.json
(every sample) and exits non-zero unless utilization, memory in use and power rose under the load
and fell back after it: what placement's load signals and the ingest benchmark's changing readings
(benchmarks/ingest_server.py) assume. Also runs `topo-collector record-nvml` (the CLI that reads
inventory and metrics in one recording) and checks it succeeds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from topo_collector.nvml import read_metrics
from topo_collector.nvml_api import RealNvml

LOAD = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
keep = torch.empty(8 * 1024**3, dtype=torch.uint8, device="cuda")  # 8 GiB in use
end = time.time() + 20
while time.time() < end:
    for _ in range(50):
        a = (a @ b).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def sample(nv: RealNvml, phase: str, started: float) -> dict[str, Any]:
    [gpu] = read_metrics(nv)[:1]
    return {
        "t": round(time.monotonic() - started, 2),
        "phase": phase,
        "utilization_pct": gpu.utilization_pct,
        "memory_used_mib": gpu.memory_used_mib,
        "power_w": gpu.power_w,
        "temperature_c": gpu.temperature_c,
    }


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    nv = RealNvml()
    started = time.monotonic()
    samples: list[dict[str, Any]] = []
    for _ in range(10):
        samples.append(sample(nv, "idle", started))
        time.sleep(0.5)
    load = subprocess.Popen([sys.executable, "-c", LOAD])
    while load.poll() is None:
        samples.append(sample(nv, "load", started))
        time.sleep(0.5)
    for _ in range(16):
        samples.append(sample(nv, "after", started))
        time.sleep(0.5)

    def most(phase: str, key: str) -> float:
        return max(float(s[key] or 0) for s in samples if s["phase"] == phase)

    def least(phase: str, key: str) -> float:
        return min(float(s[key] or 0) for s in samples if s["phase"] == phase)

    checks = {
        "utilization rose": most("load", "utilization_pct") >= 50 > most("idle", "utilization_pct"),
        "memory in use rose by 8 GiB": most("load", "memory_used_mib") - most("idle", "memory_used_mib") >= 8000,
        "power rose by 100 W": most("load", "power_w") - least("idle", "power_w") >= 100,
        "utilization fell after": least("after", "utilization_pct") < 50,
        "readings differ between samples": len({(s["power_w"], s["temperature_c"]) for s in samples}) > 1,
    }
    with tempfile.TemporaryDirectory() as tmp:
        rec = subprocess.run(
            [sys.executable, "-m", "topo_collector.cli", "record-nvml", f"{tmp}/rec.json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        calls = len(json.loads(Path(f"{tmp}/rec.json").read_text())["calls"]) if rec.returncode == 0 else 0
    checks["record-nvml succeeded"] = rec.returncode == 0 and calls > 0
    report = {
        "load_exit": load.returncode,
        "checks": checks,
        "record_nvml": {"rc": rec.returncode, "calls": calls, "stderr": rec.stderr[-300:]},
        "ok": all(checks.values()),
        "samples": samples,
    }
    (out / "metrics.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "device-out")))
