"""The agent does not push a host with no GPUs over a host that had GPUs (the service would delete them)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from topo_collector.agent import Agent, Outcome
from topo_collector.collect import build_host_facts
from topo_collector.nvml import read_nvml
from topo_collector.nvml_api import ReplayNvml
from topo_collector.spool import Spool, SpoolEntry
from topo_collector.sysfs import SysfsInventory
from topo_facts import HostFacts, HostMetrics

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "hgx-h100.json"


class Recorder:
    """A sender that acknowledges everything and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes]] = []

    def send(self, entry: SpoolEntry) -> tuple[Outcome, str]:
        self.sent.append((entry.kind, entry.host, entry.body()))
        return Outcome.ACKED, ""


def _facts(with_gpus: bool) -> HostFacts:
    nvml = read_nvml(ReplayNvml.load(RECORDING)) if with_gpus else None
    return build_host_facts("h100-a", nvml, SysfsInventory(), collected_at=datetime.now(UTC))


def _agent(spool_dir: Path, docs: list[HostFacts], *, allow_no_gpus: bool = False) -> tuple[Agent, Recorder]:
    sender = Recorder()
    agent = Agent(
        spool=Spool(spool_dir),
        sender=sender,  # type: ignore[arg-type]
        collect_facts=lambda: docs.pop(0),
        allow_no_gpus=allow_no_gpus,
    )
    return agent, sender


def test_no_gpus_after_gpus_is_not_pushed_even_after_a_restart(tmp_path: Path) -> None:
    agent, sender = _agent(tmp_path, [_facts(True), _facts(False)])
    agent.facts_cycle()
    agent.facts_cycle()
    assert [len(HostFacts.model_validate_json(b).gpus) for _, _, b in sender.sent] == [8]
    # A restarted agent remembers (the spool directory keeps it), and a host with GPUs again is sent.
    agent, sender = _agent(tmp_path, [_facts(False), _facts(True)])
    agent.facts_cycle()
    agent.facts_cycle()
    assert [len(HostFacts.model_validate_json(b).gpus) for _, _, b in sender.sent] == [8]


def test_no_gpus_is_pushed_when_allowed_or_when_the_host_never_had_any(tmp_path: Path) -> None:
    agent, sender = _agent(tmp_path / "a", [_facts(True), _facts(False)], allow_no_gpus=True)
    agent.facts_cycle()
    agent.facts_cycle()
    assert [len(HostFacts.model_validate_json(b).gpus) for _, _, b in sender.sent] == [8, 0]
    agent, sender = _agent(tmp_path / "b", [_facts(False), _facts(False)])
    agent.facts_cycle()
    agent.facts_cycle()
    assert len(sender.sent) == 2


class BlockingSender(Recorder):
    """Holds the first send until released: the other job runs while a flush is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.sending = threading.Event()
        self.release = threading.Event()

    def send(self, entry: SpoolEntry) -> tuple[Outcome, str]:
        first = not self.sent
        outcome = super().send(entry)
        if first:
            self.sending.set()
            assert self.release.wait(30), "the test never released the first send"
        return outcome


def test_facts_and_metrics_jobs_send_each_document_once_in_order(tmp_path: Path) -> None:
    sender = BlockingSender()
    facts = _facts(True)
    metrics_collected = threading.Event()

    def metrics() -> HostMetrics:
        metrics_collected.set()
        return HostMetrics.of(facts)

    agent = Agent(spool=Spool(tmp_path), sender=sender, collect_facts=lambda: facts, collect_metrics=metrics)  # type: ignore[arg-type]
    errors: list[BaseException] = []

    def job(fn: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - the assertion below reports it
                errors.append(exc)

        t = threading.Thread(target=run)
        t.start()
        return t

    facts_job = job(agent.facts_cycle)
    assert sender.sending.wait(30)
    metrics_job = job(agent.metrics_cycle)  # the scheduler's other thread, while facts are on the wire
    assert metrics_collected.wait(30)
    metrics_job.join(0.5)  # room for an unserialised metrics job to put and flush on its own
    sender.release.set()
    facts_job.join()
    metrics_job.join()
    assert errors == []
    assert [kind for kind, _, _ in sender.sent] == ["facts", "metrics"]
    assert len(agent.spool) == 0
