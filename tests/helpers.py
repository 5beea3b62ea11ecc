"""Small host fact sets for tests, built with the same builders the demo uses."""

from __future__ import annotations

from typing import Any

from topo_facts import HostFacts

from graphsvc.synthetic.hosts import HostSpec, a100_pcie, dgx1_v100, dgx_h100, gb200_tray, l40s


def h100(name: str = "node-a", seed: int = 1, **spec: Any) -> HostFacts:
    return dgx_h100(HostSpec(name, spec.get("cluster", "default"), spec.get("rack", "rack-1"), None, seed))


def a100(name: str = "a100-a", seed: int = 2) -> HostFacts:
    return a100_pcie(HostSpec(name, "default", "rack-2", None, seed))


def l40(name: str = "l40s-a", seed: int = 3) -> HostFacts:
    return l40s(HostSpec(name, "default", "rack-3", None, seed))


def dgx1(name: str = "dgx1-a", seed: int = 4) -> HostFacts:
    return dgx1_v100(HostSpec(name, "default", "rack-4", None, seed))


def tray(name: str, clique: str, seed: int = 5) -> HostFacts:
    return gb200_tray(HostSpec(name, "default", "nvl-rack", None, seed), clique)


def as_json(facts: HostFacts) -> dict[str, Any]:
    data: dict[str, Any] = facts.model_dump(mode="json")
    return data


def with_changes(facts: HostFacts, **changes: Any) -> HostFacts:
    return HostFacts.model_validate({**as_json(facts), **changes})


# The per-GPU constraints of a default request, as the candidate statements take them
# ($filters of fragment placement_usable; engine.gpu_filters): healthy GPUs, nothing else asked.
DEFAULT_GPU_FILTERS: dict[str, Any] = {
    "healthy": True,
    "min_memory_mib": -1,
    "max_temperature_c": 1e9,
    "max_utilization_pct": 1e9,
    "max_memory_used_mib": 1e9,
    "nic_affinity": False,
    "rail_up": False,
}
