"""Bearer tokens with roles: collector, scheduler, operator.

Tokens are stored only as SHA-256 digests (a tokens file or GRAPHSVC_TOKENS). A
collector token names the hosts it may write; a scheduler may read, place and reserve,
and renew or release only its own reservations; an operator may do everything.
`--insecure-dev` (what `graphsvc demo` uses, loudly) treats every caller as an operator.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from starlette.requests import HTTPConnection

log = logging.getLogger(__name__)


class Role(StrEnum):
    COLLECTOR = "collector"
    SCHEDULER = "scheduler"
    OPERATOR = "operator"


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    hosts: tuple[str, ...] = ()

    def may_write_host(self, host: str) -> bool:
        if self.role is Role.OPERATOR:
            return True
        return self.role is Role.COLLECTOR and any(fnmatchcase(host, pattern) for pattern in self.hosts)


DEV = Principal("insecure-dev", Role.OPERATOR)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(name: str, role: Role, hosts: list[str] | None = None) -> tuple[str, dict[str, object]]:
    """A fresh token and the entry to store for it (the token itself is never stored)."""
    token = "gs_" + secrets.token_urlsafe(32)
    return token, {"name": name, "role": role.value, "sha256": digest(token), "hosts": hosts or []}


@dataclass
class TokenStore:
    entries: dict[str, Principal] = field(default_factory=dict)  # sha256 -> principal

    @classmethod
    def from_json(cls, text: str) -> TokenStore:
        store = cls()
        for item in json.loads(text or "[]"):
            sha = str(item["sha256"]).lower()
            if len(sha) != 64:
                raise ValueError(f"token entry {item.get('name')!r}: sha256 must be 64 hex digits")
            store.entries[sha] = Principal(str(item["name"]), Role(item["role"]), tuple(item.get("hosts") or ()))
        return store

    @classmethod
    def load(cls, path: Path | None, inline: str | None) -> TokenStore:
        store = cls.from_json(path.read_text()) if path else cls()
        if inline:
            store.entries.update(cls.from_json(inline).entries)
        return store

    def lookup(self, token: str) -> Principal | None:
        wanted = digest(token)
        for sha, principal in self.entries.items():
            if hmac.compare_digest(sha, wanted):
                return principal
        return None


AUTH_REQUIRED = "authentication required: send 'Authorization: Bearer <token>'"
UNKNOWN_TOKEN = "unknown, expired or revoked token"  # noqa: S105 - a message, not a secret


def bearer_token(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def principal_for(state: Any, header: str) -> Principal | None:
    """The caller an Authorization header names (DEV in insecure mode), None if nobody.

    Shared by the dependency below and by the body-size middleware, which must know the
    caller before a single byte of the body is read.
    """
    if state.settings.insecure_dev:
        return DEV
    token = bearer_token(header)
    if token is None:
        return None
    principal: Principal | None = state.tokens.lookup(token)
    return principal


def authenticate(request: HTTPConnection) -> Principal:
    """FastAPI dependency: the caller, or 401 saying how to authenticate."""
    header = request.headers.get("authorization", "")
    principal = principal_for(request.app.state, header)
    if principal is not None:
        return principal
    detail = AUTH_REQUIRED if bearer_token(header) is None else UNKNOWN_TOKEN
    raise HTTPException(status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


def require(principal: Principal, *roles: Role) -> None:
    if principal.role not in roles:
        needed = " or ".join(r.value for r in roles)
        raise HTTPException(
            status_code=403, detail=f"forbidden: this needs the {needed} role (you are {principal.role})"
        )


class RateLimiter:
    """Token buckets per caller: `rate` actions a minute, bursts up to `burst`."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = burst
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str, now: float | None = None, cost: float = 1.0) -> bool:
        """Take `cost` from the caller's bucket if it holds that much."""
        now = time.monotonic() if now is None else now
        tokens, last = self.buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < cost:
            self.buckets[key] = (tokens, now)
            return False
        self.buckets[key] = (tokens - cost, now)
        return True

    def wait_s(self, key: str, cost: float = 1.0) -> float:
        """Seconds until the bucket holds `cost` again (as of its last update)."""
        tokens, _last = self.buckets.get(key, (float(self.burst), 0.0))
        return max(0.0, (min(cost, float(self.burst)) - tokens) / self.rate)
