"""What a lent GPU machine can show beyond the nvidia-smi comparison: cost, the CLI, a real outage.

Not part of the pytest suite (it needs an NVIDIA GPU and driver). Usage, on the GPU host, after
check_collector_on_gpu.py:

    python tests/device/device_extras.py OUT_DIR [--nvml-replay RECORDING]

(``--nvml-replay`` rehearses the script on a machine without a GPU, before device time is spent.)

Writes OUT_DIR/extras.json and exits non-zero if a check fails:
  * cost: wall and CPU time of a full NVML inventory, a metrics read and a sysfs read against the
    real driver (the replayed numbers in docs/benchmarks/collector.json cannot show ioctl cost),
    and how many NVML calls each makes;
  * the CLI as a host runs it (``topo-collector collect --dry-run``) reports the same GPUs;
  * an outage as it happens: the agent runs with no service listening, is killed with SIGKILL
    (a crash, not a clean stop); what it spooled is whole on disk; a second agent on the same
    spool, once a service answers, delivers each spooled entry or a newer one that supersedes it
    (a host's newer fact set replaces its older facts and metrics), empties the spool, and stops
    cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from topo_collector.nvml import read_metrics, read_nvml
from topo_collector.nvml_api import NvmlApi, RealNvml, RecordingNvml, ReplayNvml
from topo_collector.spool import Spool
from topo_collector.sysfs import read_sysfs
from topo_facts import HostFacts, HostMetrics


def timed(fn: Callable[[], object], runs: int) -> dict[str, float]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    walls.sort()
    cpus.sort()
    return {
        "runs": runs,
        "wall_ms_p50": round(walls[len(walls) // 2] * 1000, 3),
        "wall_ms_max": round(walls[-1] * 1000, 3),
        "cpu_ms_p50": round(cpus[len(cpus) // 2] * 1000, 3),
    }


def cost(replay: Path | None) -> dict[str, Any]:
    nv: NvmlApi = ReplayNvml.load(replay) if replay else RealNvml()
    recorder = RecordingNvml(nv)
    read_nvml(recorder)
    inventory_calls = len(recorder.calls)
    recorder = RecordingNvml(nv)
    read_metrics(recorder)
    metrics_calls = len(recorder.calls)
    return {
        "inventory": {**timed(lambda: read_nvml(nv), 10), "nvml_calls": inventory_calls},
        "metrics": {**timed(lambda: read_metrics(nv), 30), "nvml_calls": metrics_calls},
        "sysfs": timed(read_sysfs, 5),
    }


def cli_dry_run(facts_path: Path, replay: Path | None) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "topo_collector.cli", "collect", "--dry-run", *replay_args(replay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result: dict[str, Any] = {"rc": run.returncode, "stderr": run.stderr[-500:]}
    if run.returncode == 0:
        cli = HostFacts.model_validate_json(run.stdout)
        checked = HostFacts.model_validate_json(facts_path.read_text()) if facts_path.exists() else None
        result["gpus"] = [g.uuid for g in cli.gpus]
        result["same_gpus_as_check"] = checked is not None and [g.uuid for g in checked.gpus] == result["gpus"]
    return result


class Receiver(BaseHTTPRequestHandler):
    """A stand-in for the service's two ingest routes: it only records what arrives, in order."""

    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        Receiver.received.append((self.path, body))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_args: object) -> None:
        return


def collected_at(kind: str, body: bytes) -> datetime:
    """Parsing is the check that the entry is whole (a torn write would not parse)."""
    model = HostFacts if kind == "facts" else HostMetrics
    return model.model_validate_json(body).collected_at


def replay_args(replay: Path | None) -> list[str]:
    return ["--nvml-replay", str(replay)] if replay else []


def agent(port: int, spool: Path, log: Path, replay: Path | None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "topo_collector.cli", "run", "--server", f"http://127.0.0.1:{port}"]
    cmd += ["--interval", "1s", "--metrics-interval", "1s", "--spool-dir", str(spool), "--host", "gpu-host"]
    cmd += replay_args(replay)
    return subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


class _ExclusiveServer(ThreadingHTTPServer):
    """No SO_REUSEADDR: while bound and not yet listening, no other socket can bind its port."""

    allow_reuse_address = False


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return -9


def outage(work: Path, replay: Path | None) -> dict[str, Any]:
    spool_dir = work / "spool"
    log = work / "agent.log"
    # The service's socket is bound from the start and listens only once the service is "up": while
    # it does not listen the agent's connections are refused, as by a host with no service, and no
    # other process can take the port in between (a port found free and bound later can be).
    server = _ExclusiveServer(("127.0.0.1", 0), Receiver, bind_and_activate=False)
    agents: list[subprocess.Popen[bytes]] = []
    serving = False
    try:
        server.server_bind()
        port = int(server.server_address[1])
        down = agent(port, spool_dir, log, replay)
        agents.append(down)
        time.sleep(6)
        _stop(down, signal.SIGKILL)
        spooled = [(e.kind, e.body()) for e in Spool(spool_dir).pending()]
        server.server_activate()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        serving = True
        up = agent(port, spool_dir, log, replay)
        agents.append(up)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(Receiver.received) < len(spooled) + 2:
            time.sleep(0.2)
        rc = _stop(up)
    finally:
        for proc in agents:  # a step that failed leaves no agent running in its own session
            if proc.poll() is None:
                _stop(proc, signal.SIGKILL)
        if serving:
            server.shutdown()
        server.server_close()
    received = [("facts" if path.endswith("/facts") else "metrics", body) for path, body in Receiver.received]
    received_at = [(kind, collected_at(kind, body)) for kind, body in received]
    # Nothing lost: each spooled entry arrived, or a newer one that supersedes it did.
    covered = all(
        any(got_at >= at and (got_kind == "facts" or got_kind == kind) for got_kind, got_at in received_at)
        for kind, at in ((kind, collected_at(kind, body)) for kind, body in spooled)
    )
    return {
        "spooled_while_down": len(spooled),
        "spooled_kinds": sorted({kind for kind, _body in spooled}),
        "received_after": len(received),
        "received_kinds": {k: sum(1 for kind, _ in received if kind == k) for k in ("facts", "metrics")},
        "spooled_delivered_or_superseded": covered,
        "left_in_spool": len(Spool(spool_dir).pending()),
        "spooled_whole_after_sigkill": True,
        "sigterm_exit": rc,
        "agent_log_tail": log.read_text(errors="replace")[-1500:],
    }


def main(out: Path, replay: Path | None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="device-extras-"))
    report: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("cost", lambda: cost(replay)),
        ("cli_dry_run", lambda: cli_dry_run(out / "facts.json", replay)),
        ("outage", lambda: outage(work, replay)),
    ]
    for name, step in steps:
        try:
            report[name] = step()
        except Exception as exc:  # noqa: BLE001 (a device run is one shot: record the failure, go on)
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
    outage_ok = report["outage"].get("spooled_while_down", 0) > 0 and report["outage"].get(
        "spooled_delivered_or_superseded"
    )
    report["ok"] = (
        "error" not in report["cost"]
        and report["cli_dry_run"].get("same_gpus_as_check") is True
        and bool(outage_ok)
        and report["outage"].get("sigterm_exit") == 0
    )
    shutil.rmtree(work, ignore_errors=True)
    (out / "extras.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    replay_path = Path(args[args.index("--nvml-replay") + 1]) if "--nvml-replay" in args else None
    raise SystemExit(main(Path(args[0] if args else "device-out"), replay_path))
