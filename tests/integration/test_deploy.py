"""Deployment: TLS and token-only serving, the refusal to serve openly by accident, docker files."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.security.auth import Role, new_token
from tests.service import port_once_listening

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_serve_refuses_to_run_without_tokens(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    proc = subprocess.run(
        [sys.executable, "-m", "graphsvc.cli", "serve", "--data-dir", str(tmp_path / "d"), "--port", "0"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "no API tokens configured" in proc.stderr and "--insecure-dev" in proc.stderr


def test_tls_with_tokens(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    token, entry = new_token("ops", Role.OPERATOR)
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps([entry]))
    port_file = tmp_path / "serve.port"
    trust = ssl.create_default_context(cafile=str(cert))
    cmd = [sys.executable, "-m", "graphsvc.cli", "serve", "--data-dir", str(tmp_path / "d"), "--port", "0",
           "--port-file", str(port_file), "--tokens-file", str(tokens),
           "--tls-cert", str(cert), "--tls-key", str(key)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port = port_once_listening(port_file, proc, lambda: proc.stderr.read().decode() if proc.stderr else "")
        url = f"https://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", verify=trust, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        query = {"query": "{ clusterSummary { hosts } }"}
        assert httpx.post(f"{url}/graphql", json=query, verify=trust).status_code == 401
        ok = httpx.post(f"{url}/graphql", json=query, verify=trust, headers={"authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and ok.json()["data"]["clusterSummary"]["hosts"] == 0
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)  # plain HTTP is not served
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert token not in err.decode()


def test_dockerfiles_build_what_the_tests_install() -> None:
    service = (ROOT / "docker" / "service.Dockerfile").read_text()
    collector = (ROOT / "docker" / "collector.Dockerfile").read_text()
    assert service.count("FROM ") == 2 and collector.count("FROM ") == 2  # multi-stage
    assert "pip wheel --no-cache-dir --wheel-dir /wheels ./collectors ." in service  # the same two packages
    assert "pip wheel --no-cache-dir --wheel-dir /wheels ./collectors\n" in collector  # only the collector
    for text in (service, collector):
        assert "\nUSER " in text  # not root
    for path in ("schema/", "queries/", "graphsvc/", "collectors/", "pyproject.toml"):
        assert f"COPY {path}" in service


def test_compose_file_is_valid() -> None:
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("no Docker engine on this machine: `docker compose config` cannot run (no daemon)")
    env = {**os.environ, "NEO4J_PASSWORD": "x", "GRAPHSVC_TOKENS": "[]", "TOPO_TOKEN": "x"}
    proc = subprocess.run(
        [docker, "compose", "-f", str(ROOT / "docker" / "compose.yaml"), "config", "--quiet"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
