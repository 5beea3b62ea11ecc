"""#13.11: tokens expire, a changed tokens file is reloaded without a restart, and
`graphsvc demo --tokens-file` authenticates with them instead of silently ignoring them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.security.auth import Principal, Role, TokenStore, new_token
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from tests.service import port_once_listening

OLD_TOKEN, OLD_ENTRY = new_token("old-sched", Role.SCHEDULER)
NEW_TOKEN, NEW_ENTRY = new_token("new-sched", Role.SCHEDULER)
SHORT_TOKEN, SHORT_ENTRY = new_token("short-lived", Role.SCHEDULER, expires_at=1_800_000_000.0)
OPS_TOKEN, OPS_ENTRY = new_token("demo-ops", Role.OPERATOR)
SECRETS = (OLD_TOKEN, NEW_TOKEN, SHORT_TOKEN, OPS_TOKEN)  # the secrets-in-logs test looks for these
QUERY = {"query": "{ clusterSummary { hosts } }"}


@pytest.mark.parametrize(
    ("expires_at", "now", "valid"),
    [
        (None, 4_000_000_000.0, True),
        (1_800_000_000.0, 1_799_999_999.0, True),
        (1_800_000_000.0, 1_800_000_000.0, False),
        ("2027-01-15T00:00:00Z", 1_800_000_000.0, False),  # 1.8e9 s is 2027-01-15T08:00Z
        ("2027-01-15T09:00:00Z", 1_800_000_000.0, True),
        ("2030-01-01T00:00:00+00:00", 1_800_000_000.0, True),
        ("2020-01-01T00:00:00+00:00", 1_800_000_000.0, False),
    ],
)
def test_expiry_table(expires_at: object, now: float, valid: bool) -> None:
    token, entry = new_token("t", Role.SCHEDULER)
    if expires_at is not None:
        entry["expires_at"] = expires_at
    store = TokenStore.from_json(json.dumps([entry]))
    store.clock = lambda: now
    assert (store.lookup(token) is not None) == valid


@pytest.mark.parametrize("bad", ["tomorrow", "2027-01-01T00:00:00", True, [1]])
def test_bad_expiry_is_refused_at_load(bad: object) -> None:
    _, entry = new_token("t", Role.SCHEDULER)
    entry["expires_at"] = bad
    with pytest.raises(ValueError, match="expires_at"):
        TokenStore.from_json(json.dumps([entry]))


def test_new_token_writes_an_iso_expiry() -> None:
    assert SHORT_ENTRY["expires_at"] == "2027-01-15T08:00:00+00:00"


def write(path: Path, entries: list[dict[str, object]], generation: int) -> None:
    path.write_text(json.dumps(entries))
    # A distinct mtime whatever the file system's clock granularity.
    os.utime(path, ns=(generation * 10**9, generation * 10**9))


async def status(app: object, token: str) -> int:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        return (await c.post("/graphql", json=QUERY, headers={"authorization": f"Bearer {token}"})).status_code


async def test_tokens_file_is_reloaded_when_it_changes(gateway: Gateway, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    write(path, [OLD_ENTRY], 1)
    app = create_app(Settings(tokens_file=path), gateway=gateway)
    assert await status(app, OLD_TOKEN) == 200
    assert await status(app, NEW_TOKEN) == 401

    write(path, [NEW_ENTRY], 2)  # revoke the old token, add a new one: no restart
    assert await status(app, OLD_TOKEN) == 401
    assert await status(app, NEW_TOKEN) == 200

    path.write_text("[{not json")  # a bad edit: logged, and the tokens in force stay
    os.utime(path, ns=(3 * 10**9, 3 * 10**9))
    assert await status(app, NEW_TOKEN) == 200
    assert app.state.tokens.reloads == 1


async def test_expired_token_is_refused_like_an_unknown_one(gateway: Gateway) -> None:
    app = create_app(Settings(tokens=json.dumps([SHORT_ENTRY])), gateway=gateway)
    app.state.tokens.clock = lambda: 1_700_000_000.0
    assert await status(app, SHORT_TOKEN) == 200
    app.state.tokens.clock = lambda: 1_900_000_000.0
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        resp = await c.get("/v1/hosts/x", headers={"authorization": f"Bearer {SHORT_TOKEN}"})
    assert resp.status_code == 401
    assert "expired" in resp.json()["error"]


def test_extra_tokens_survive_a_reload_and_can_be_revoked(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    write(path, [OLD_ENTRY], 1)
    store = TokenStore.load(path, None)
    sha = store.add(NEW_ENTRY)
    write(path, [OLD_ENTRY, OPS_ENTRY], 2)
    assert store.lookup(NEW_TOKEN) == Principal("new-sched", Role.SCHEDULER)
    assert store.lookup(OPS_TOKEN) is not None
    store.revoke(sha)
    assert store.lookup(NEW_TOKEN) is None


@pytest.mark.slow
def test_demo_with_a_tokens_file_authenticates(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps([OPS_ENTRY]))
    log_path, port_file = tmp_path / "demo.log", tmp_path / "demo.port"
    env = {**os.environ}
    env.pop("GRAPHSVC_INSECURE_DEV", None)
    cmd = [sys.executable, "-m", "graphsvc.cli", "--log-level", "warning", "demo", "--profile", "l40s:hosts=2",
           "--tokens-file", str(tokens), "--data-dir", str(tmp_path / "data"),
           "--port", "0", "--port-file", str(port_file)]  # fmt: skip
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log_file, env=env)
    try:
        port = port_once_listening(port_file, proc, log_path.read_text)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            for _ in range(3000):  # bounded attempts: a loaded machine only takes longer
                assert proc.poll() is None, log_path.read_text()[-3000:]
                if "ready at" in log_path.read_text():
                    break
                time.sleep(0.05)
            assert c.get("/healthz").json()["hosts"] == 2  # the demo loaded its cluster with its own token
            assert c.get("/v1/hosts/l40s-001").status_code == 401  # but callers need one
            ops = {"authorization": f"Bearer {OPS_TOKEN}"}
            assert c.get("/v1/hosts/l40s-001", headers=ops).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    text = log_path.read_text()
    assert "INSECURE DEV MODE" not in text
    assert "authentication on" in text
