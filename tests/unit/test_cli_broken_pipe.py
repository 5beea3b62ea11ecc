"""`graphsvc place … | head -1`: the reader closing the pipe early ends the CLI quietly (no
"graphsvc: error: [Errno 32] Broken pipe"), as any Unix filter would."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.http_stand_in import answer

CANDIDATES = 3000  # ~1 MB of table: far more than a pipe holds, so the writer meets the closed end


def _placement() -> dict[str, object]:
    gpus = [{"uuid": f"GPU-{i}", "index": i, "host": {"name": "h100-su1-n01"}} for i in range(8)]
    candidate = {
        "score": 0.9, "bottleneckGbps": 400, "maxIbHops": 0, "ibHopsKnown": True, "asOf": 0,
        "reason": "all in one NVLink domain " * 8, "fragmentation": None,
        "hosts": [{"name": "h100-su1-n01"}], "gpus": gpus,
    }  # fmt: skip
    return {
        "request": "8xH100", "searchedUnits": 1, "elapsedMs": 1.0, "migCandidates": [], "infeasible": [],
        "candidates": [{**candidate, "rank": r} for r in range(1, CANDIDATES + 1)],
    }  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        answer(self, 200, json.dumps({"data": {"placementText": _placement()}}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_closed_stdout_ends_the_cli_quietly(service: str, reader: str) -> None:
    exe = shutil.which("graphsvc")
    assert exe, "the graphsvc console script is not installed"
    script = f'"{exe}" place 8xH100 --server {service} | {reader}; exit "${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 141), done.stderr
    assert done.stderr == ""
    if reader == "head -1":
        assert done.stdout.startswith("8xH100  (1 units read")
