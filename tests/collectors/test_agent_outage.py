"""The agent keeps facts through a service outage and replays them when it returns."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from topo_collector.agent import Agent, Sender
from topo_collector.collect import build_host_facts
from topo_collector.nvml import read_metrics, read_nvml
from topo_collector.nvml_api import ReplayNvml
from topo_collector.spool import Spool
from topo_collector.sysfs import read_sysfs
from topo_facts import HostFacts, HostMetrics

from tests.service import ServiceProcess

pytestmark = pytest.mark.slow
RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "hgx-h100.json"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_outage_spools_three_cycles_then_replays(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path / "data")
    service.start()
    nv = ReplayNvml.load(RECORDING)
    sysfs = read_sysfs()
    collected: list[HostFacts] = []

    def facts() -> HostFacts:
        f = build_host_facts("outage-host", read_nvml(nv), sysfs, collected_at=datetime.now(UTC))
        collected.append(f)
        return f

    def metrics() -> HostMetrics:
        return HostMetrics(hostname="outage-host", collected_at=datetime.now(UTC), gpus=read_metrics(nv))

    clock = FakeClock()
    spool = Spool(tmp_path / "spool")
    agent = Agent(
        spool=spool,
        sender=Sender(service.url, timeout_s=120),
        collect_facts=facts,
        collect_metrics=metrics,
        clock=clock,
    )
    try:
        agent.facts_cycle()
        assert len(spool) == 0
        service.stop()
        for _ in range(3):
            clock.now += 1000  # past any backoff: every cycle really tries, and fails
            agent.facts_cycle()
            agent.metrics_cycle()
        assert agent.backoff.failures == 3  # the metrics flush right after each waits out the backoff
        # three cycles of facts and metrics compact to the newest of each
        assert [e.kind for e in spool.pending()] == ["facts", "metrics"]
        service.start()
        clock.now += 1000
        assert agent.flush() == 2
        assert len(spool) == 0 and agent.backoff.failures == 0
        host = httpx.get(f"{service.url}/v1/hosts/outage-host", timeout=120).json()
        assert host["collected_at"] == pytest.approx(collected[-1].collected_at.timestamp())
        assert len(host["gpus"]) == 8
        assert [g["temperature_c"] for g in host["gpus"]] == [40, 41, 42, 43, 44, 45, 46, 47]
    finally:
        agent.sender.close()
        service.stop()


def test_rejected_facts_do_not_block_the_queue(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path / "data")
    service.start()
    spool = Spool(tmp_path / "spool")
    good = build_host_facts("good-host", None, read_sysfs())
    spool.put("facts", "bad-host", b'{"hostname": "bad-host"}')
    agent = Agent(spool=spool, sender=Sender(service.url, timeout_s=120), collect_facts=lambda: good)
    try:
        agent.facts_cycle()
        assert len(spool) == 0
        assert len(list((tmp_path / "spool" / "rejected").glob("*.json"))) == 1
        assert httpx.get(f"{service.url}/v1/hosts/good-host", timeout=120).status_code == 200
    finally:
        agent.sender.close()
        service.stop()
