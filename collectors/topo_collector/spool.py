"""A bounded on-disk queue of fact sets waiting for the service.

Each entry is one file, written to a temporary name, fsynced and renamed, so a
crash leaves either the whole entry or none. Entries replay oldest first. A newer
full fact set of a host supersedes its older fact sets and metrics (the service
would ignore them anyway), and newer metrics supersede older metrics: after any
outage the queue holds at most one fact set and one metrics sample per host.

One writer and one flusher at a time: `put`, `ack` and `reject` are not safe against each other
from several threads (two puts could take one sequence number); the agent serialises them.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{12})-(facts|metrics)-([A-Za-z0-9._-]+)\.json$")


@dataclass(frozen=True)
class SpoolEntry:
    path: Path
    seq: int
    kind: str
    host: str

    def body(self) -> bytes:
        return self.path.read_bytes()


class Spool:
    def __init__(self, directory: Path, *, max_entries: int = 1000, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rejected_dir = directory / "rejected"
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        for stale in self.dir.glob("*.tmp"):
            stale.unlink(missing_ok=True)  # a write interrupted by a crash

    def pending(self) -> list[SpoolEntry]:
        out = []
        for p in self.dir.iterdir():
            m = _NAME.match(p.name)
            if m:
                out.append(SpoolEntry(p, int(m.group(1)), m.group(2), m.group(3)))
        return sorted(out, key=lambda e: e.seq)

    def __len__(self) -> int:
        return len(self.pending())

    def put(self, kind: str, host: str, body: bytes) -> SpoolEntry:
        if kind not in ("facts", "metrics"):
            raise ValueError(f"unknown spool kind {kind!r}")
        entries = self.pending()
        seq = entries[-1].seq + 1 if entries else 1
        final = self.dir / f"{seq:012d}-{kind}-{host}.json"
        tmp = final.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.rename(final)
        self._fsync_dir()
        entry = SpoolEntry(final, seq, kind, host)
        for old in entries:
            superseded = old.host == host and (kind == "facts" or old.kind == "metrics")
            if superseded:
                old.path.unlink(missing_ok=True)
        self._enforce_bounds()
        return entry

    def ack(self, entry: SpoolEntry) -> None:
        entry.path.unlink(missing_ok=True)
        self._fsync_dir()

    def reject(self, entry: SpoolEntry, reason: str) -> None:
        """Keep what the service refused for good, out of the way of what it will take."""
        self.rejected_dir.mkdir(exist_ok=True)
        target = self.rejected_dir / entry.path.name
        entry.path.rename(target)
        target.with_suffix(".reason").write_text(reason)
        log.error("spool: the service rejected %s for good: %s", entry.path.name, reason[:500])

    def _enforce_bounds(self) -> None:
        entries = self.pending()
        total = sum(e.path.stat().st_size for e in entries)
        while entries and (len(entries) > self.max_entries or total > self.max_bytes):
            victim = next((e for e in entries if e.kind == "metrics"), entries[0])
            total -= victim.path.stat().st_size
            victim.path.unlink(missing_ok=True)
            entries.remove(victim)
            log.warning("spool full: dropped %s", victim.path.name)

    def _fsync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def describe(entry: SpoolEntry) -> str:
    try:
        data = json.loads(entry.body())
    except (OSError, ValueError):
        return entry.path.name
    return f"{entry.kind} of {entry.host} collected {data.get('collected_at')}"
