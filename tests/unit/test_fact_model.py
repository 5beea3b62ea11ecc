"""The shared fact model rejects inconsistent facts and names the field at fault."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError
from topo_facts import FabricFacts, HostFacts

from tests.helpers import as_json, h100


def _invalid(data: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as err:
        HostFacts.model_validate(data)
    return str(err.value)


def test_synthetic_dgx_h100_is_valid() -> None:
    facts = h100()
    assert len(facts.gpus) == 8
    assert len(facts.nvswitches) == 4
    assert all(sum(link.links for link in g.nvlinks) == 18 for g in facts.gpus)


def test_unknown_nvlink_peer_names_the_field() -> None:
    data = as_json(h100())
    data["gpus"][3]["nvlinks"][0]["peer_id"] = "no-such-switch"
    assert "gpus[3].nvlinks[0].peer_id" in _invalid(data)


def test_a_peer_named_twice_in_one_gpus_nvlinks_is_rejected() -> None:
    """Its lanes were added up: an NVSwitch named three times gave an H100 54 lanes (stop 73)."""
    data = as_json(h100())
    links = data["gpus"][0]["nvlinks"]
    data["gpus"][0]["nvlinks"] = [*links, links[1]]
    assert f"gpus[0].nvlinks[{len(links)}].peer_id: {links[1]['peer_id']!r} named twice" in _invalid(data)


def test_both_gpus_of_a_pair_may_name_each_other() -> None:
    """A GPU-to-GPU pair is reported by each GPU (host_plan keeps one edge): not a duplicate."""
    data = as_json(h100())
    a, b = data["gpus"][0], data["gpus"][1]
    a["nvlinks"].append({"peer_type": "gpu", "peer_id": b["uuid"], "links": 1, "bandwidth_gbps": 50.0})
    b["nvlinks"].append({"peer_type": "gpu", "peer_id": a["uuid"], "links": 1, "bandwidth_gbps": 50.0})
    HostFacts.model_validate(data)


def test_duplicate_gpu_uuid_rejected() -> None:
    data = as_json(h100())
    data["gpus"][1]["uuid"] = data["gpus"][0]["uuid"]
    assert "gpus[1].uuid: duplicate" in _invalid(data)


def test_pcie_cycle_rejected() -> None:
    data = as_json(h100())
    a, b = data["pcie_switches"][0]["bus_id"], data["pcie_switches"][1]["bus_id"]
    data["pcie_switches"][0]["parent"] = b
    data["pcie_switches"][1]["parent"] = a
    assert "loops" in _invalid(data)


def test_naive_timestamp_rejected() -> None:
    data = as_json(h100())
    data["collected_at"] = datetime(2026, 1, 1).isoformat()
    assert "collected_at" in _invalid(data)


@pytest.mark.parametrize("name", ["a'b", "x`y", "a b", "MATCH (n) DETACH DELETE n", "", "-lead", "é"])
def test_hostile_host_names_rejected(name: str) -> None:
    data = as_json(h100())
    data["hostname"] = name
    assert "hostname" in _invalid(data)


def test_unknown_fields_rejected() -> None:
    data = as_json(h100())
    data["gpus"][0]["surprise"] = 1
    assert "gpus.0.surprise" in _invalid(data)


def test_fabric_tiers_must_go_up() -> None:
    with pytest.raises(ValidationError, match="must be below"):
        FabricFacts.model_validate(
            {
                "switches": [{"name": "s1", "tier": "spine"}, {"name": "l1", "tier": "leaf"}],
                "switch_uplinks": [{"lower": "s1", "upper": "l1", "bandwidth_gbps": 50}],
            }
        )


def test_fabric_unknown_switch_rejected() -> None:
    with pytest.raises(ValidationError, match=r"nic_uplinks\[0\].switch"):
        FabricFacts.model_validate(
            {"nic_uplinks": [{"host": "h", "nic": "mlx5_0", "switch": "nope", "bandwidth_gbps": 50}]}
        )
