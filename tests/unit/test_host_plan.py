"""NVLink domains and edges derived from one host's facts."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from topo_facts import GPUState, Health, HostFacts

from graphsvc.ingest.host_plan import FINGERPRINT, facts_digest, gpu_state, host_params, unchanged_params
from tests.helpers import a100, dgx1, h100, l40, tray


def _domain_sizes(params: dict[str, object]) -> list[int]:
    links = params["gpu_domains"]
    assert isinstance(links, list)
    return sorted(Counter(link["dst"] for link in links).values())


def test_hgx_board_is_one_domain_of_eight() -> None:
    p = host_params(h100(), received_at=0)
    assert _domain_sizes(p) == [8]
    assert p["domains"][0]["props"]["kind"] == "nvswitch"
    assert len(p["switch_nvlinks"]) == 32


def test_bridged_a100_pairs_are_four_domains_of_two() -> None:
    p = host_params(a100(), received_at=0)
    assert _domain_sizes(p) == [2, 2, 2, 2]
    # each pair reported from both ends is stored once
    assert len(p["gpu_nvlinks"]) == 4


def test_pcie_only_host_has_no_domain() -> None:
    p = host_params(l40(), received_at=0)
    assert p["domains"] == [] and p["gpu_nvlinks"] == []


def test_dgx1_cube_mesh_is_one_direct_domain_with_16_pairs() -> None:
    p = host_params(dgx1(), received_at=0)
    assert _domain_sizes(p) == [8]
    assert len(p["gpu_nvlinks"]) == 16


def test_nvl72_tray_joins_the_fabric_clique() -> None:
    p = host_params(tray("t1", "cl/rack1/clique-0"), received_at=0)
    assert {link["dst"] for link in p["gpu_domains"]} == {"default/fabric/cl/rack1/clique-0"}  # in its cluster
    assert p["domains"][0]["props"]["kind"] == "fabric-clique"


def _with_gpu(facts: HostFacts, i: int, **changes: object) -> HostFacts:
    gpus = list(facts.gpus)
    gpus[i] = gpus[i].model_copy(update=changes)
    return facts.model_copy(update={"gpus": gpus})


def test_the_facts_digest_moves_with_the_fingerprint_not_with_health_and_load() -> None:
    """#15: an unchanged document skips planning when its digest is the one last planned, so a
    same digest must mean a same fingerprint, and the small statement's parameters must be
    what the plan gives."""
    base = h100()
    later = base.model_copy(update={"collected_at": base.collected_at + timedelta(seconds=30)})
    loaded = _with_gpu(later, 3, temperature_c=88.0, utilization_pct=99.0, health=Health.DEGRADED)
    for facts in (later, loaded):
        assert facts_digest(facts) == facts_digest(base)
        assert host_params(facts, received_at=1)["host"]["props"][FINGERPRINT] == _fingerprint(base)
    for changed in (
        _with_gpu(base, 0, memory_mib=1),
        base.model_copy(update={"rack": "rack-9"}),
        base.model_copy(update={"nics": [base.nics[0].model_copy(update={"rate_gbps": 100.0}), *base.nics[1:]]}),
    ):
        assert facts_digest(changed) != facts_digest(base)
        assert _fingerprint(changed) != _fingerprint(base)
    params = host_params(loaded, received_at=7.0)
    small = unchanged_params(loaded, received_at=7.0, fingerprint=_fingerprint(loaded))
    assert small["props"] == params["host"]["props"]
    assert small["readings"] == {g["uuid"]: g["state"] for g in params["gpus"]}
    assert all(set(g["state"]) <= set(GPUState.model_fields) for g in params["gpus"])
    assert not any(set(g["props"]) & set(GPUState.model_fields) for g in params["gpus"])  # written apart


def _fingerprint(facts: HostFacts) -> str:
    return str(host_params(facts, received_at=0)["host"]["props"][FINGERPRINT])


def test_a_gpus_state_is_its_json_dump_of_the_state_fields() -> None:
    """`gpu_state` reads attributes; it must give what the JSON-mode dump of GPUState's fields
    gives (enums as values, unset values left out), for every health and with lists set."""
    base = h100()
    for health in Health:
        gpu = _with_gpu(
            base, 2, health=health, health_reasons=["xid 79"], xid_errors=[79, 94], temperature_c=None, power_w=512.5
        ).gpus[2]
        dumped = {
            k: v for k, v in gpu.model_dump(mode="json", include=set(GPUState.model_fields)).items() if v is not None
        }
        assert gpu_state(gpu) == dumped
        assert type(gpu_state(gpu)["health"]) is str
