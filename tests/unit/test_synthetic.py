"""Synthetic clusters follow the reference architectures they claim to."""

from __future__ import annotations

from collections import Counter

import pytest
from topo_facts import SwitchTier

from graphsvc.ingest.host_plan import host_params
from graphsvc.synthetic.clusters import PROFILES, Profile, build


def test_demo_profile_has_every_family_and_1000_gpus() -> None:
    c = build("demo")
    models = c.gpus_by_model()
    assert c.gpu_count >= 1000
    assert models == {
        "NVIDIA H100 80GB HBM3": 127 * 8,  # 4 SU = 127 nodes (one slot holds the UFM)
        "NVIDIA GB200": 72,
        "NVIDIA A100 80GB PCIe": 64,
        "NVIDIA L40S": 32,
    }


def test_superpod_su_has_8_rail_leaves_and_rail_alignment() -> None:
    c = build("superpod-h100:sus=2")
    assert len(c.hosts) == 63
    leaves = [s for s in c.switches if s.tier == "leaf"]
    spines = [s for s in c.switches if s.tier == "spine"]
    assert (len(leaves), len(spines)) == (16, 8)  # RA table: 2 SU -> 16 leaf / 8 spine
    rail_of = {s.name: s.rail for s in leaves}
    for up in c.nic_uplinks:
        host = next(h for h in c.hosts if h.hostname == up.host)
        nic = next(n for n in host.nics if n.name == up.nic)
        assert rail_of[up.switch] == nic.rail
    c.fabric()  # validates


def test_nvl72_rack_is_one_clique_of_72() -> None:
    c = build("nvl72:racks=2")
    domains = Counter(g.nvlink_domain for h in c.hosts for g in h.gpus)
    assert sorted(domains.values()) == [72, 72]
    assert all(len(h.gpus) == 4 for h in c.hosts)


def test_sized_profile_hits_the_gpu_count() -> None:
    c = build("sized:gpus=8192")
    assert c.gpu_count == 8192
    tiers = Counter(s.tier for s in c.switches)
    assert tiers[SwitchTier.CORE] > 0  # beyond 4 SU the fabric grows a core tier
    c.fabric()


def test_profile_parse_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="unknown profile"):
        Profile.parse("nope")
    with pytest.raises(ValueError, match="takes"):
        Profile.parse("nvl72:sus=2")
    with pytest.raises(ValueError, match="key=integer"):
        Profile.parse("nvl72:racks=x")
    assert set(PROFILES) >= {"demo", "superpod-h100", "nvl72", "a100-pcie", "l40s", "dgx1", "sized"}


def test_synthetic_is_deterministic_for_a_seed() -> None:
    a = [g.uuid for h in build("a100-pcie:hosts=2").hosts for g in h.gpus]
    b = [g.uuid for h in build("a100-pcie:hosts=2").hosts for g in h.gpus]
    assert a == b


def test_every_host_plans_cleanly() -> None:
    for h in build("demo").hosts[::7]:
        params = host_params(h, received_at=0.0)
        assert len(params["gpus"]) == len(h.gpus)
