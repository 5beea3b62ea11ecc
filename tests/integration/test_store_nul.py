"""A NUL character in a parameter: FalkorDB's statement header cannot carry one.

A read looks it up as U+FFFD (nothing stored holds either, so it matches nothing, as on
Neo4j); a write is refused as invalid input, never sent half-escaped.
"""

from __future__ import annotations

import pytest

from graphsvc.store.errors import UnrepresentableParameter
from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load


async def test_a_nul_in_a_parameter_reads_nothing_and_is_never_written(gateway: Gateway) -> None:
    cluster = await load(gateway, "a100-pcie")
    uuid = cluster.hosts[0].gpus[0].uuid
    assert await gateway.read("gpus_by_uuid", {"uuids": [uuid]})
    assert await gateway.read("gpus_by_uuid", {"uuids": [uuid + "\x00"]}) == []
    if gateway.kind in ("embedded", "falkordb"):
        with pytest.raises(UnrepresentableParameter):
            await gateway.write("set_gpu_state", {"uuids": [uuid, "x\x00"], "state": "reserved"})
    else:
        await gateway.write("set_gpu_state", {"uuids": ["x\x00"], "state": "reserved"})
    (row,) = await gateway.read("gpus_by_uuid", {"uuids": [uuid]})
    assert row.get("state", "free") == "free"
