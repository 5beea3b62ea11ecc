"""`graphsvc demo` from a shell: after it loads, /healthz shows exactly the profile's counts."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.store.schema import GRAPH_VERSION
from graphsvc.synthetic.clusters import build
from tests.service import port_once_listening

pytestmark = pytest.mark.slow


def test_demo_loads_the_declared_cluster(tmp_path: Path) -> None:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    expected = build("demo")
    port_file = tmp_path / "demo.port"
    proc = subprocess.Popen(
        [exe, "demo", "--port", "0", "--port-file", str(port_file), "--data-dir", str(tmp_path / "data")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ},
    )
    try:
        port = port_once_listening(port_file, proc, lambda: proc.stdout.read().decode() if proc.stdout else "")
        health: dict[str, object] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
            except httpx.HTTPError:
                health = {}
            if health.get("hosts") == len(expected.hosts):
                break
            time.sleep(0.25)
        assert health.get("hosts") == len(expected.hosts)
        assert health["gpus"] == expected.gpu_count >= 1000
        assert health["gpus_by_model"] == expected.gpus_by_model()
        assert health["store"] == "embedded" and health["graph_version"] == GRAPH_VERSION
        url = f"http://127.0.0.1:{port}"
        place = subprocess.run(
            [exe, "place", "8xH100 nvlink=full-mesh ib-hops<=1", "--server", url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert place.returncode == 0, place.stderr
        assert "#1 score" in place.stdout and "all in one NVLink domain" in place.stdout
        nope = subprocess.run(
            [exe, "place", "2xL40S nvlink=any", "--server", url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert nope.returncode == 2 and "infeasible [nvlink]" in nope.stdout
        typo = subprocess.run(
            [exe, "place", "8xH100 nvlnk=full-mesh", "--server", url], capture_output=True, text=True, timeout=120
        )
        assert typo.returncode == 1 and "did you mean 'nvlink'?" in typo.stderr
        held = subprocess.run(
            [exe, "reserve", "8xH100 nvlink=full-mesh", "--holder", "cli-job", "--ttl", "10m", "--server", url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert held.returncode == 0, held.stderr + held.stdout
        rid = held.stdout.split()[0]
        assert rid.startswith("rsv-") and "cli-job" in held.stdout
        shown = subprocess.run([exe, "reservation", rid, "--server", url], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and shown.stdout.startswith(f"{rid}  active  holder cli-job  expires "), shown
        gpu_lines = [line for line in shown.stdout.splitlines() if "NVIDIA H100" in line]
        assert len(gpu_lines) == 8 and all("health unknown" not in line for line in gpu_lines), shown.stdout
        assert not any("not held" in line for line in gpu_lines), shown.stdout
        renewed = subprocess.run(
            [exe, "renew", rid, "--ttl", "20m", "--server", url], capture_output=True, text=True, timeout=60
        )
        assert renewed.returncode == 0 and renewed.stdout.startswith(f"{rid}: expires "), renewed
        assert re.search(r"\(in (20m|19m \d+s)\)$", renewed.stdout.strip()), renewed.stdout  # the new lease
        freed = subprocess.run([exe, "release", rid, "--server", url], capture_output=True, text=True, timeout=60)
        assert freed.returncode == 0 and f"{rid}: released" in freed.stdout
        after = subprocess.run([exe, "reservation", rid, "--server", url], capture_output=True, text=True, timeout=60)
        assert after.returncode == 0 and after.stdout.startswith(f"{rid}  released  holder cli-job  ended "), after
        gpu_lines = [line for line in after.stdout.splitlines() if "NVIDIA H100" in line]
        assert len(gpu_lines) == 8 and all(line.endswith("(not held)") for line in gpu_lines), after.stdout
        late = subprocess.run([exe, "renew", rid, "--server", url], capture_output=True, text=True, timeout=60)
        assert late.returncode == 2 and late.stdout.startswith("LeaseExpired: the reservation was released"), late
        gone = subprocess.run([exe, "reservation", "rsv-nope", "--server", url], capture_output=True, text=True)
        assert gone.returncode == 2 and gone.stdout == "no reservation 'rsv-nope'\n"
        second = subprocess.run(
            [exe, "demo", "--port", "0", "--data-dir", str(tmp_path / "data")],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 1
        assert "Traceback" not in second.stderr
        errors = [line for line in second.stderr.splitlines() if " ERROR " in line or "error:" in line]
        assert errors == [f"graphsvc: error: data directory {tmp_path / 'data'} is in use by another graphsvc "
                          f"(pid {proc.pid}); stop it or choose another --data-dir"]  # fmt: skip
        graphiql = httpx.get(f"{url}/graphql", headers={"accept": "text/html"}, timeout=10)
        assert graphiql.status_code == 200 and "graphiql" in graphiql.text.lower()  # demo runs in dev mode
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    text = out.decode()
    assert "loading 161 hosts / 1184 GPUs" in text
    assert "hosts 161/161" in text  # progress output
    ready = next(line for line in text.splitlines() if "ready at" in line)
    assert all(f"http://127.0.0.1:{port}{path}" in ready for path in ("/ui/", "/graphql", "/docs"))
    assert "LeaseKeeper.tick" not in text and "Traceback" not in text  # ticks are DEBUG
    assert proc.returncode in (0, 130)
    assert not (tmp_path / "data" / "falkordb.sock").exists()  # store stopped cleanly
