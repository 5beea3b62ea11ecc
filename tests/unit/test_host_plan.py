"""NVLink domains and edges derived from one host's facts."""

from __future__ import annotations

from collections import Counter

from graphsvc.ingest.host_plan import host_params
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
    assert {link["dst"] for link in p["gpu_domains"]} == {"cl/rack1/clique-0"}
    assert p["domains"][0]["props"]["kind"] == "fabric-clique"
