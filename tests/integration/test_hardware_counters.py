"""Hardware error counters beyond what the stores hold are kept saturated (topo_facts.models.
MAX_COUNTER), on both stores: one collector's 2**64 no longer fails ingest on Neo4j (the driver
cannot pack it), two near 2**63 no longer fail every placement that reads the host (the read sums
them), and FalkorDB no longer scores a GPU with 2**64 errors as one with none (a probe's cases)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from topo_facts import HostMetrics
from topo_facts.models import MAX_COUNTER, GPUMetrics

from graphsvc.ingest.service import ingest_host, ingest_metrics
from graphsvc.placement.engine import PlacementEngine
from graphsvc.placement.request import parse_request
from graphsvc.store.gateway import Gateway
from tests.helpers import h100, with_changes


def test_a_counter_beyond_the_limit_is_saturated_and_a_negative_one_refused() -> None:
    gpu = GPUMetrics(uuid="GPU-1", nvlink_crc_errors=2**64 + 5)
    assert gpu.nvlink_crc_errors == MAX_COUNTER
    with pytest.raises(ValidationError):
        GPUMetrics(uuid="GPU-1", ecc_uncorrected=-1)


async def test_huge_counters_are_stored_and_rank_a_gpu_last(gateway: Gateway) -> None:
    noisy, clean = h100("noisy"), h100("clean", seed=2)
    nics = [{**n.model_dump(mode="json"), "symbol_errors": 2**64, "port_rcv_errors": 2**63 - 1} for n in noisy.nics]
    await ingest_host(gateway, with_changes(noisy, nics=nics))  # validated, as the API validates it
    await ingest_host(gateway, clean)
    huge = {"nvlink_crc_errors": 2**63 - 1, "nvlink_replay_errors": 2**63 - 1, "nvlink_recovery_errors": 2**64}
    gpus = [GPUMetrics(uuid=g.uuid, health="ok", **huge) for g in noisy.gpus]
    await ingest_metrics(gateway, HostMetrics(hostname="noisy", collected_at=datetime.now(UTC), gpus=gpus))
    rows = await gateway.read("placement_host_gpus", {"hosts": ["noisy"]})
    assert {r["nvlink_errors"] for r in rows} == {3 * MAX_COUNTER}
    result = await PlacementEngine(gateway).place(parse_request("8xH100 limit=2").validated())
    assert [c.hosts[0].name for c in result.candidates] == ["clean", "noisy"]
