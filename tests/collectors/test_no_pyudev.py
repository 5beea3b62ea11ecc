"""Without the pyudev package only `collect` (which reads sysfs through it) fails, with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OCI = ROOT / "tests" / "fixtures" / "topology" / "oci-bm-gpu-h100-8.nccl.xml"
# sys.modules["pyudev"] = None makes `import pyudev` raise ImportError, as on a host without it.
BLOCK = "import sys; sys.modules['pyudev'] = None; from topo_collector.cli import main; sys.exit(main(sys.argv[1:]))"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, timeout=60, check=False)


def test_import_and_help_work_without_pyudev() -> None:
    proc = run("import", str(OCI), "--host", "x")
    assert proc.returncode == 0, proc.stderr
    assert '"hostname": "x"' in proc.stdout
    assert run("--help").returncode == 0


def test_collect_without_pyudev_says_so_in_one_line() -> None:
    proc = run("collect", "--once", "--dry-run", "--host", "x")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("topo-collector: error:")]
    assert len(errors) == 1 and "pyudev package is not installed" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
