"""The collector's command line, and that it stays installable without the service."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

from topo_facts import HostFacts

ROOT = Path(__file__).resolve().parents[2]
SERVICE_ONLY = {"graphsvc", "fastapi", "starlette", "uvicorn", "strawberry", "falkordb", "neo4j", "redis"}


def test_collectors_import_nothing_from_the_service() -> None:
    for path in (ROOT / "collectors").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in SERVICE_ONLY, f"{path}: imports {name}"
    deps = tomllib.loads((ROOT / "collectors" / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {d.split("==")[0] for d in deps} == {"pydantic", "nvidia-ml-py", "pyudev", "apscheduler", "httpx"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("topo-collector")
    assert exe, "topo-collector is not installed"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, check=False)


def test_collect_once_dry_run_prints_valid_facts() -> None:
    proc = run("collect", "--once", "--dry-run", "--host", "cli-host")
    assert proc.returncode == 0, proc.stderr
    facts = HostFacts.model_validate_json(proc.stdout)
    assert facts.hostname == "cli-host"


def test_collect_with_replayed_nvml() -> None:
    rec = ROOT / "tests" / "fixtures" / "nvml" / "hgx-h100.json"
    proc = run("collect", "--once", "--dry-run", "--host", "h", "--nvml-replay", str(rec))
    facts = HostFacts.model_validate_json(proc.stdout)
    assert len(facts.gpus) == 8 and len(facts.nvswitches) == 4


def test_import_command() -> None:
    f = ROOT / "tests" / "fixtures" / "topology" / "oci-bm-gpu-h100-8.nccl.xml"
    proc = run("import", str(f), "--host", "oci-1")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["hostname"] == "oci-1" and len(data["gpus"]) == 8


def test_import_of_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    proc = run("import", str(tmp_path / "nope.xml"), "--host", "x")
    assert proc.returncode == 1
    assert proc.stderr.startswith("topo-collector: error:") and "Traceback" not in proc.stderr


def test_durations() -> None:
    from topo_collector.cli import duration

    assert [duration(x) for x in ("60s", "10m", "1h", "500ms", "5")] == [60, 600, 3600, 0.5, 5]
