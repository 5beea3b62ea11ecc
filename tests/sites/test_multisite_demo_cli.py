"""`graphsvc demo --profile multisite` from a shell, then the sites CLI against it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.service import port_once_listening

pytestmark = pytest.mark.slow

COMPARE = ["compare-sites", "64", "--gpu-hours", "6400", "--comm-share", "0.2", "--reference-model", "H100",
           "--dataset-gb", "1000000"]  # fmt: skip


def _ready(url: str) -> bool:
    try:
        sites = httpx.get(f"{url}/v1/sites", timeout=2).json()
        facts = httpx.post(f"{url}/graphql", json={"query": "{ costFacts { key } }"}, timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return False
    loaded = isinstance(sites, list) and len(sites) == 3 and all(s["gpus"] for s in sites)
    return loaded and len((facts.get("data") or {}).get("costFacts") or []) >= 18


def test_multisite_demo_and_the_sites_cli(tmp_path: Path) -> None:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    port_file = tmp_path / "demo.port"
    proc = subprocess.Popen(
        [exe, "demo", "--profile", "multisite", "--port", "0", "--port-file", str(port_file),
         "--data-dir", str(tmp_path / "data")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ},
    )  # fmt: skip
    port = port_once_listening(port_file, proc, lambda: proc.stdout.read().decode() if proc.stdout else "")
    url = f"http://127.0.0.1:{port}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, *args, "--server", url], capture_output=True, text=True, timeout=120, check=False)

    try:
        deadline = time.monotonic() + 300
        while not _ready(url):
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the multi-site demo did not load"
            time.sleep(0.5)
        listed = cli("sites")
        assert listed.returncode == 0, listed.stderr
        assert "248/248 free NVIDIA H100 80GB HBM3" in listed.stdout and "neocloud-se1" in listed.stdout
        tight = cli(*COMPARE, "--data-site", "onprem-dc1", "--objective", "cheapest-under-deadline",
                    "--deadline-h", "60", "-o", "json")  # fmt: skip
        assert tight.returncode == 0, tight.stderr
        assert json.loads(tight.stdout)["choice"] == "neocloud-se1"
        table = cli(*COMPARE, "--data-site", "aws-us-east-1")
        assert table.returncode == 0, table.stderr
        assert "-> aws-us-east-1" in table.stdout
        assert "missing: GPU-hour price of NVIDIA H100 80GB HBM3 (spot) at aws-us-east-1" in table.stdout
        none = cli(*COMPARE, "--data-site", "onprem-dc1", "--objective", "cheapest-under-deadline", "--deadline-h", "1")
        assert none.returncode == 2 and "no site satisfies it" in none.stdout
        bad = cli(*COMPARE, "--data-site", "mars")
        assert bad.returncode == 1 and "dataSite: unknown site 'mars'" in bad.stderr
        prices = tmp_path / "prices.toml"
        prices.write_text(
            'catalog = "ops-1"\n[[fact]]\nkind = "gpu-hour"\nsite = "aws-us-east-1"\nmodel = "H100"\n'
            'capacity = "spot"\nvalue = 4.0\nsource = "operator:finance"\nas_of = "2026-11-01"\n'
        )
        loaded = cli("prices", "load", str(prices))
        assert loaded.returncode == 0 and "1 facts written" in loaded.stdout, loaded.stderr
        spot = cli(*COMPARE, "--data-site", "aws-us-east-1", "-o", "json")
        aws = next(s for s in json.loads(spot.stdout)["sites"] if s["site"] == "aws-us-east-1")
        assert aws["capacity"] == "spot" and aws["complete"]
        assert aws["totalCost"] == pytest.approx(100 * (1 + 0.05 / 2) * 64 * 4.0)  # spot: 102.5 h at $4
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
