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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
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


def new_token(
    name: str, role: Role, hosts: list[str] | None = None, expires_at: float | None = None
) -> tuple[str, dict[str, object]]:
    """A fresh token and the entry to store for it (the token itself is never stored)."""
    token = "gs_" + secrets.token_urlsafe(32)
    entry: dict[str, object] = {"name": name, "role": role.value, "sha256": digest(token), "hosts": hosts or []}
    if expires_at is not None:
        entry["expires_at"] = datetime.fromtimestamp(expires_at, UTC).isoformat(timespec="seconds")
    return token, entry


@dataclass(frozen=True)
class TokenEntry:
    principal: Principal
    expires_at: float | None = None  # epoch seconds; None: until revoked


def _expiry(item: dict[str, Any]) -> float | None:
    """`expires_at` as epoch seconds or an ISO 8601 time with a zone (2027-01-31T00:00:00Z)."""
    value = item.get("expires_at")
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            when = None
        if when is not None and when.tzinfo is not None:
            return when.timestamp()
    raise ValueError(f"token entry {item.get('name')!r}: expires_at must be epoch seconds or an ISO time with a zone")


def parse_entries(text: str) -> dict[str, TokenEntry]:
    """sha256 -> entry, from the JSON list a tokens file (or GRAPHSVC_TOKENS) holds."""
    entries: dict[str, TokenEntry] = {}
    items = json.loads(text or "[]")
    if not isinstance(items, list):
        raise ValueError("the tokens file must hold a JSON list of entries")
    for item in items:
        sha = str(item["sha256"]).lower()
        if len(sha) != 64:
            raise ValueError(f"token entry {item.get('name')!r}: sha256 must be 64 hex digits")
        principal = Principal(str(item["name"]), Role(item["role"]), tuple(item.get("hosts") or ()))
        entries[sha] = TokenEntry(principal, _expiry(item))
    return entries


class TokenStore:
    """The tokens the service accepts: a file (reloaded when it changes), inline ones, and extras.

    Revoking or adding a token is an edit of the tokens file: the next request notices the
    file changed (mtime, size or inode; one stat per lookup) and reloads it. A file that no
    longer parses is logged once and the tokens loaded before stay in force, so a bad edit
    does not lock everybody out. Expired tokens (`expires_at`) are refused like unknown ones.
    """

    def __init__(
        self,
        entries: dict[str, TokenEntry] | None = None,
        *,
        path: Path | None = None,
        inline: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.entries: dict[str, TokenEntry] = dict(entries or {})
        self.extra: dict[str, TokenEntry] = {}
        self.path = path
        self.inline = inline
        self.clock = clock
        self._signature: tuple[int, int, int] | None = self._stat()
        self._bad_signature: tuple[int, int, int] | None = None
        self._expired_noted: set[str] = set()
        self.reloads = 0

    @classmethod
    def from_json(cls, text: str) -> TokenStore:
        return cls(parse_entries(text))

    @classmethod
    def load(cls, path: Path | None, inline: str | None, clock: Callable[[], float] = time.time) -> TokenStore:
        entries = parse_entries(path.read_text()) if path else {}
        if inline:
            entries.update(parse_entries(inline))
        return cls(entries, path=path, inline=inline, clock=clock)

    def _stat(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except OSError:
            return (0, 0, 0)
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload_if_changed(self) -> bool:
        """Reload the tokens file if it changed since it was read; True if new tokens are in force."""
        signature = self._stat()
        if signature == self._signature or signature == self._bad_signature:
            return False
        assert self.path is not None
        try:
            entries = parse_entries(self.path.read_text())
            if self.inline:
                entries.update(parse_entries(self.inline))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self._bad_signature = signature
            log.error("tokens file %s did not load (%s); the tokens loaded before stay in force", self.path, exc)
            return False
        self.entries = entries
        self._signature = signature
        self._bad_signature = None
        self.reloads += 1
        log.warning("tokens file %s reloaded: %d token(s)", self.path, len(entries))
        return True

    def add(self, entry: dict[str, object]) -> str:
        """An extra token held in memory only (the demo's own loader); survives reloads."""
        [(sha, parsed)] = parse_entries(json.dumps([entry])).items()
        self.extra[sha] = parsed
        return sha

    def revoke(self, sha: str) -> None:
        self.extra.pop(sha, None)
        self.entries.pop(sha, None)

    def lookup(self, token: str) -> Principal | None:
        self.reload_if_changed()
        wanted = digest(token)
        found: TokenEntry | None = None
        for sha, entry in [*self.entries.items(), *self.extra.items()]:
            if hmac.compare_digest(sha, wanted):
                found = entry
        if found is None:
            return None
        if found.expires_at is not None and self.clock() >= found.expires_at:
            if found.principal.name not in self._expired_noted:
                self._expired_noted.add(found.principal.name)
                log.warning("token %r expired; refusing it", found.principal.name)
            return None
        return found.principal


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


# Where the body-size middleware leaves the caller it looked up (the scope of one HTTP request), so
# that the route's dependency does not look the same token up again: a lookup digests the token and
# compares it with every token held, ~2% of a reservation's service CPU each time (stop 66's
# profile). Only `principal_for`'s answer for this request's own Authorization header is kept.
PRINCIPAL_SCOPE_KEY = "graphsvc.principal"


def authenticate(request: HTTPConnection) -> Principal:
    """FastAPI dependency: the caller, or 401 saying how to authenticate."""
    header = request.headers.get("authorization", "")
    principal: Principal | None
    if PRINCIPAL_SCOPE_KEY in request.scope:
        principal = request.scope[PRINCIPAL_SCOPE_KEY]
    else:
        principal = principal_for(request.app.state, header)
    if principal is not None:
        return principal
    detail = AUTH_REQUIRED if bearer_token(header) is None else UNKNOWN_TOKEN
    raise HTTPException(status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


async def caller(request: HTTPConnection) -> Principal:
    """`authenticate` as a coroutine, the dependency every route uses: FastAPI runs a plain
    function dependency in a worker thread, a hop per request (per collector document, per
    reservation) that a lookup which never blocks does not need."""
    return authenticate(request)


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
