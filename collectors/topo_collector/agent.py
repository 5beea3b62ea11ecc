"""The collector agent: full facts on one schedule, metrics on another, never losing facts.

Every collection goes to the spool first and is then flushed to the service in
order. While the service is unreachable (connection errors, 5xx, 429), flushing
backs off exponentially with jitter and entries stay spooled; when it answers,
they replay oldest first and each is deleted only after the service acknowledged
it. A 4xx other than 429 means the service will never take that entry: it moves
to ``rejected/`` so it cannot block the queue.
"""

from __future__ import annotations

import logging
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from types import FrameType

import httpx
from topo_facts import HostFacts, HostMetrics

from topo_collector.spool import Spool, SpoolEntry, describe

log = logging.getLogger(__name__)


class Outcome(Enum):
    ACKED = "acked"
    RETRY = "retry"
    REJECTED = "rejected"


@dataclass
class Backoff:
    base_s: float = 1.0
    max_s: float = 300.0
    failures: int = 0
    next_attempt: float = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.next_attempt

    def failed(self, now: float) -> float:
        self.failures += 1
        delay: float = min(self.max_s, self.base_s * 2.0 ** (self.failures - 1)) * random.uniform(0.5, 1.0)
        self.next_attempt = now + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.next_attempt = 0.0


class Sender:
    def __init__(self, server: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.client = httpx.Client(base_url=server.rstrip("/"), timeout=timeout_s, headers=headers)

    def send(self, entry: SpoolEntry) -> tuple[Outcome, str]:
        return self.send_body(entry.kind, entry.host, entry.body())

    def send_body(self, kind: str, host: str, body: bytes) -> tuple[Outcome, str]:
        path = f"/v1/hosts/{host}/{'facts' if kind == 'facts' else 'metrics'}"
        try:
            resp = self.client.put(path, content=body)
        except httpx.HTTPError as exc:
            return Outcome.RETRY, f"{type(exc).__name__}: {exc}"
        if resp.status_code < 300:
            return Outcome.ACKED, resp.text[:200]
        if resp.status_code == 429 or resp.status_code >= 500:
            return Outcome.RETRY, f"HTTP {resp.status_code}"
        return Outcome.REJECTED, f"HTTP {resp.status_code}: {resp.text[:1000]}"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Agent:
    def __init__(
        self,
        *,
        spool: Spool,
        sender: Sender,
        collect_facts: Callable[[], HostFacts],
        collect_metrics: Callable[[], HostMetrics] | None = None,
        clock: Callable[[], float] = time.monotonic,
        allow_no_gpus: bool = False,
    ) -> None:
        self.spool = spool
        self.sender = sender
        self._collect_facts = collect_facts
        self._collect_metrics = collect_metrics
        self.clock = clock
        self.allow_no_gpus = allow_no_gpus
        self.backoff = Backoff()
        self.cycles = 0
        # The facts and metrics jobs run on the scheduler's thread pool at once. The spool has one
        # writer and one flusher at a time: interleaved, a flush sent an entry the other job was
        # sending (twice, out of order), read a file a put had just superseded, or two puts took
        # one sequence number. Collections (the slow part) run outside it.
        self._spool_lock = threading.RLock()

    def facts_cycle(self) -> None:
        facts = self._collect_facts()
        with self._spool_lock:
            if self._gpu_count_plausible(facts):
                self.spool.put("facts", facts.hostname, facts.model_dump_json().encode())
                self.cycles += 1
            self.flush()

    def _gpu_count_plausible(self, facts: HostFacts) -> bool:
        """False for a document with no GPUs of a host whose last document had some.

        The service replaces a host's GPUs with the document's, so such a push deletes them all;
        a driver that stopped answering is far likelier than a host that lost every GPU. The GPU
        count of the last document is kept in the spool directory (``gpus-<host>``), so a restart
        does not forget it. ``allow_no_gpus`` (``run --allow-no-gpus``) turns the check off.
        """
        state = self.spool.dir / f"gpus-{facts.hostname}"
        if facts.gpus or self.allow_no_gpus:
            state.write_text(str(len(facts.gpus)))
            return True
        try:
            before = int(state.read_text().strip() or 0)
        except (OSError, ValueError):
            before = 0
        if before:
            log.error(
                "%s: this collection found no GPUs but the last one found %d; not sending it (the service "
                "would delete them all). Is the NVIDIA driver loaded? Run with --allow-no-gpus if the host "
                "really has none now",
                facts.hostname,
                before,
            )
            return False
        return True

    def metrics_cycle(self) -> None:
        if self._collect_metrics is None:
            return
        metrics = self._collect_metrics()
        with self._spool_lock:
            if metrics.gpus:
                self.spool.put("metrics", metrics.hostname, metrics.model_dump_json().encode())
            self.flush()

    def flush(self) -> int:
        """Send spooled entries oldest first; stop at the first that must be retried."""
        with self._spool_lock:
            return self._flush()

    def _flush(self) -> int:
        if not self.backoff.ready(self.clock()):
            return 0
        sent = 0
        for entry in self.spool.pending():
            outcome, detail = self.sender.send(entry)
            if outcome is Outcome.RETRY:
                delay = self.backoff.failed(self.clock())
                log.warning(
                    "service unreachable (%s); %d entries spooled, retrying in %.0fs",
                    detail,
                    len(self.spool),
                    delay,
                )
                return sent
            if outcome is Outcome.REJECTED:
                self.spool.reject(entry, detail)
            else:
                log.debug("sent %s", describe(entry))
                self.spool.ack(entry)
                sent += 1
        if self.backoff.failures:
            log.info("service reachable again; spool drained")
        self.backoff.succeeded()
        return sent

    def run(self, interval_s: float, metrics_interval_s: float) -> None:
        """Block, running both schedules until SIGTERM or SIGINT."""
        from apscheduler.schedulers.blocking import BlockingScheduler

        scheduler = BlockingScheduler(timezone=UTC)
        now = datetime.now(UTC)
        common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        scheduler.add_job(
            self._safe(self.facts_cycle),
            "interval",
            seconds=interval_s,
            next_run_time=now,
            id="facts",
            **common,
        )
        if self._collect_metrics is not None:
            scheduler.add_job(
                self._safe(self.metrics_cycle), "interval", seconds=metrics_interval_s, id="metrics", **common
            )

        def stop(signum: int, _frame: FrameType | None) -> None:
            log.info("signal %d: stopping after the running cycle", signum)
            scheduler.shutdown(wait=False)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        log.info("collector agent: facts every %.0fs, metrics every %.0fs", interval_s, metrics_interval_s)
        scheduler.start()

    def _safe(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("collection cycle failed; the next one will try again")

        return run
