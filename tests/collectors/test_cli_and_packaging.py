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
    assert {d.split("==")[0] for d in deps} == {
        "pydantic",
        "nvidia-ml-py",
        "pyudev",
        "apscheduler",
        "httpx",
        "defusedxml",
    }


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


FIXTURES = ROOT / "tests" / "fixtures" / "topology"


def test_import_of_a_multi_host_dump_names_hosts_from_a_pattern() -> None:
    proc = run("import", str(FIXTURES / "nvl72-two-trays.nccl.xml"), "--host-pattern", "r1-t{n}", "--rack", "r1")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [h["hostname"] for h in data] == ["r1-t1", "r1-t2"]
    missing = run("import", str(FIXTURES / "nvl72-two-trays.nccl.xml"))
    assert missing.returncode == 1 and "--host-pattern" in missing.stderr and len(missing.stderr.splitlines()) == 1


def test_import_without_links_warns_what_it_lacks() -> None:
    proc = run("import", str(FIXTURES / "azure-nd-h100-v5.nccl.xml"), "--host", "nd")
    assert proc.returncode == 0, proc.stderr
    assert "warning" in proc.stderr and "no <nvlink> or <xgmi> entries" in proc.stderr


def test_zero_gpu_file_is_refused_unless_asked(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text('<system version="1"><cpu numaid="0" affinity="ff"></cpu></system>')
    proc = run("import", str(empty), "--host", "gpu-host", "--server", "http://127.0.0.1:9")
    assert proc.returncode == 1 and "no GPUs found for host gpu-host" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    ok = run("import", str(empty), "--host", "gpu-host", "--allow-no-gpus")
    assert ok.returncode == 0 and json.loads(ok.stdout)["gpus"] == []


def test_truncated_and_hostile_files_are_one_line_errors_and_nothing_is_sent(tmp_path: Path) -> None:
    good = (FIXTURES / "oci-bm-gpu-h100-8.nccl.xml").read_text()
    truncated = tmp_path / "cut.xml"
    truncated.write_text(good[: len(good) // 2])
    laughs = tmp_path / "laughs.xml"
    laughs.write_text(
        '<?xml version="1.0"?><!DOCTYPE system [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]><system>&d;</system>'
    )
    for f in (truncated, laughs):
        # A server that does not exist: were anything sent, the error would be a connection error.
        proc = run("import", str(f), "--host", "h", "--server", "http://127.0.0.1:9")
        assert proc.returncode == 1, proc.stdout
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "XML" in proc.stderr and "connect" not in proc.stderr.lower()
