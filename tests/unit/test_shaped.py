"""Shaped placement as a pure function: one table test per rule (tiers, escalation, spread, ranks, launch)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graphsvc.placement.model import Gpu, Host
from graphsvc.placement.rank_layout import launch_plan
from graphsvc.placement.request import RequestError
from graphsvc.placement.shape import JobShape, Level, ShapedPlacement, Tier, parse_shape
from graphsvc.placement.shape_keys import is_shaped
from graphsvc.placement.shaped import place_shape


def hgx(name: str, su: str, leaf: str, free: int = 8, model: str = "NVIDIA H100 80GB HBM3") -> Host:
    """An 8-GPU NVSwitch board; the first `free` GPUs free; rail = local index."""
    gpus = [
        Gpu(
            uuid=f"{name}-g{i}", index=i, host=name, model=model, memory_mib=81559,
            state="free" if i < free else "reserved", health="ok", temperature_c=40.0, utilization_pct=0.0,
            nvlink_domain=f"{name}-nvs", domain_kind="nvswitch", nic=f"{name}-nic{i}", rail=i, nic_rate_gbps=400.0,
            via="pcie-switch", leaf=f"{leaf}-r{i}", switch_gbps=900.0,
        )
        for i in range(8)
    ]  # fmt: skip
    return Host(name, None, su, [leaf], "pod1", None, gpus)


def cluster(free: dict[str, int]) -> list[Host]:
    """Hosts named su<k>-n<j>: su1/su2 each one leaf (leafA/leafB), free GPUs per host as given."""
    leaf = {"su1": "leafA", "su2": "leafB"}
    return [hgx(name, name.split("-")[0], leaf[name.split("-")[0]], f) for name, f in free.items()]


def placed(shape: JobShape, hosts: list[Host]) -> ShapedPlacement:
    answer = place_shape(shape, hosts)
    assert isinstance(answer, ShapedPlacement), answer
    return answer


@pytest.mark.parametrize(
    ("text", "tp", "pp", "dp", "job"),
    [
        ("tp=8 pp=2 dp=4 model=H100", 8, 2, 4, Level(Tier.LEAF, False)),
        ("groups=8 group-size=8 job-in=scalable-unit:required", 8, 1, 8, Level(Tier.SCALABLE_UNIT, True)),
        ("tp=4 dp=2 job-in=su", 4, 1, 2, Level(Tier.SCALABLE_UNIT, False)),
    ],
)
def test_text_form(text: str, tp: int, pp: int, dp: int, job: Level) -> None:
    s = parse_shape(text)
    assert (s.tp, s.pp, s.dp, s.job_level) == (tp, pp, dp, job)
    assert parse_shape(s.text()) == s


@pytest.mark.parametrize(
    ("text", "field", "says"),
    [
        ("pp=2", "text", "needs tp="),
        ("tp=0", "tp", "at least 1"),
        ("tp=8 dp=1024", "ranks", "more than"),
        ("tp=8 groups=2 dp=2", "text", "either groups="),
        ("tp=8 job-in=galaxy", "text", "tiers are"),
        ("tp=8 job-in=host group-in=leaf", "groupIn", "wider"),
        ("tp=8 colour=blue", "text", "unknown key"),
        ("tp=eight", "text", "is not a count (digits 0-9, at most 6)"),
        ("tp=8 dp=-1", "text", "'-1' is not a count"),
        ("tp=٨", "text", "is not a count"),  # isdigit() takes other scripts' digits
        ("tp=²", "text", "is not a count"),  # and superscripts, which int() then refused: a ValueError
        ("tp=8 mem>=٨٠", "text", "is not a number"),  # float() took it as 80 (a review's case)
        ("tp=8 mem>=1_0", "text", "is not a number"),
        ("tp=8 tp=4", "text", "give each option once"),  # placed as tp=4 (a probe's case)
        ("tp=8 groups=2 group-size=4", "text", "give each option once"),  # group-size is tp
        ("tp=8 mem>=80 memory>=40", "text", "give each option once"),
    ],
)
def test_text_errors_name_the_field(text: str, field: str, says: str) -> None:
    with pytest.raises(RequestError) as err:
        parse_shape(text)
    assert err.value.field == field and says in err.value.message


def test_megatron_rank_order_and_stage_major_layout() -> None:
    hosts = cluster({f"su1-n{j}": 8 for j in range(4)})
    p = placed(JobShape(tp=4, pp=2, dp=2), hosts)
    for r in p.ranks:
        assert r.rank == r.tp_rank + 4 * (r.dp_rank + 2 * r.pp_rank)
    # A stage's two DP replicas share a host (DP all-reduce on NVLink); the stages are neighbours.
    for pp_rank in range(2):
        assert len({r.host for r in p.ranks if r.pp_rank == pp_rank}) == 1
    assert {b.level: b.bottleneck_gbps for b in p.bandwidth} == {"tp": 900.0, "pp": 50.0, "dp": 900.0}
    assert launch_plan(p).contiguous


def test_dp_rings_keep_their_rail_across_hosts() -> None:
    hosts = cluster({f"su1-n{j}": 8 for j in range(4)})
    p = placed(JobShape(tp=8, dp=3), hosts)
    assert p.rail_aligned_share == 1.0
    for k in range(8):
        assert {r.rail for r in p.ranks if r.tp_rank == k} == {k}


def test_best_fit_unit_keeps_the_larger_leaf_whole() -> None:
    hosts = cluster({"su1-n0": 8, "su1-n1": 8, "su1-n2": 8, "su2-n0": 8, "su2-n1": 8})
    p = placed(JobShape(tp=8, dp=2), hosts)
    assert p.job_unit == "leafB"  # 16 eligible there: nothing left over; leafA keeps its 24


def test_preferred_leaf_widens_and_says_so() -> None:
    hosts = cluster({"su1-n0": 8, "su1-n1": 8, "su2-n0": 8})
    p = placed(JobShape(tp=8, dp=3), hosts)
    assert p.job_tier is Tier.POD and p.escalated and "the most is 2 in leafA" in p.escalated[0]


def test_required_leaf_is_not_widened() -> None:
    hosts = cluster({"su1-n0": 8, "su1-n1": 8, "su2-n0": 8})
    answer = place_shape(JobShape(tp=8, dp=3, job_level=Level(Tier.LEAF, True)), hosts)
    assert not isinstance(answer, ShapedPlacement)
    assert answer[0].constraint == "jobIn" and "job-in=leaf:preferred" in (answer[0].nearest_feasible or "")


def test_required_domain_groups_never_straddle_hosts() -> None:
    hosts = cluster({"su1-n0": 4, "su1-n1": 4})  # 8 free GPUs, but no board has 8
    answer = place_shape(JobShape(tp=8), hosts)
    assert not isinstance(answer, ShapedPlacement) and answer[0].constraint == "groupIn"


def test_preferred_domain_groups_widen_to_the_leaf() -> None:
    hosts = cluster({"su1-n0": 4, "su1-n1": 4})
    p = placed(JobShape(tp=8, group_level=Level(Tier.NVLINK_DOMAIN, False)), hosts)
    assert p.groups[0].tier is Tier.LEAF and "groups: 1 of 1" in p.escalated[0]
    assert {b.level: b.bottleneck_gbps for b in p.bandwidth}["tp"] == 50.0


def test_spread_over_leaves_alternates() -> None:
    hosts = cluster({f"su1-n{j}": 8 for j in range(3)} | {f"su2-n{j}": 8 for j in range(3)})
    p = placed(JobShape(tp=8, dp=4, spread_leaves=True, job_level=Level(Tier.POD, True)), hosts)
    leaves = [h.split("-")[0] for g in p.groups for h in g.hosts]
    assert leaves.count("su1") == 2 and leaves.count("su2") == 2


def test_unhealthy_and_other_models_are_not_used() -> None:
    hosts = cluster({"su1-n0": 8, "su1-n1": 8})
    hosts[0].gpus[3].health = "failed"
    hosts[1].gpus[0].model = "NVIDIA A100-SXM4-80GB"
    answer = place_shape(JobShape(tp=8, model="H100"), hosts)
    assert not isinstance(answer, ShapedPlacement)
    p = placed(JobShape(tp=4, dp=2, model="H100"), hosts)
    used = {r.gpu_uuid for r in p.ranks}
    assert "su1-n0-g3" not in used and "su1-n1-g0" not in used


@pytest.mark.parametrize(("tp", "pp", "contiguous"), [(8, 1, True), (8, 2, True), (4, 2, True), (2, 1, True)])
def test_launch_plan(tp: int, pp: int, contiguous: bool) -> None:
    hosts = cluster({f"su1-n{j}": 8 for j in range(4)})
    p = placed(JobShape(tp=tp, pp=pp, dp=2), hosts)
    plan = launch_plan(p)
    assert plan.contiguous is contiguous
    assert plan.rankfile.count("\n") == tp * pp * 2
    assert sum(len(h.ranks) for h in plan.hosts) == tp * pp * 2
    assert plan.nccl_env["NCCL_CROSS_NIC"] == "0"
    first = plan.hosts[0]
    assert first.cuda_visible_devices.split(",")[0] == str(p.ranks[0].gpu_index)


def test_uneven_hosts_need_the_rankfile() -> None:
    hosts = cluster({"su1-n0": 8, "su1-n1": 4})
    plan = launch_plan(placed(JobShape(tp=4, dp=3), hosts))
    assert not plan.contiguous and [len(h.ranks) for h in plan.hosts] == [8, 4]


@pytest.mark.parametrize(
    ("text", "shaped"),
    [
        ("tp=8 pp=2 dp=4 model=H100", True),
        ("groups=8 group-size=8 group-in=nvlink-domain", True),
        ("  TP=4", True),
        ("8xH100 nvlink=full-mesh", False),
        ("", False),
        ("model=H100 tp=8", False),
    ],
)
def test_the_cli_tells_a_shaped_job_by_its_first_key(text: str, shaped: bool) -> None:
    assert is_shaped(text) is shaped


@pytest.mark.parametrize(
    ("shape", "says"),
    [
        (JobShape(tp=3), "3 GPUs on 1 host: 1 TP group of 3,"),
        (JobShape(tp=8, dp=2), "16 GPUs on 2 hosts: 2 TP groups of 8,"),
    ],
)
def test_the_reason_counts_in_words(shape: JobShape, says: str) -> None:
    """A demo user read "3 GPUs on 1 hosts: 1 TP groups of 3"."""
    assert placed(shape, cluster({f"su1-n{j}": 8 for j in range(4)})).reason.startswith(says)


@pytest.mark.parametrize(("job_in", "unit"), [("cluster", "cluster:c1"), ("scalable-unit", "c1/su1")])
def test_a_job_never_spans_two_clusters_of_a_site(job_in: str, unit: str) -> None:
    """Two clusters of one site are two fabrics (no cable joins them), and both name their
    scalable unit `su1`: a job kept to one cluster or one scalable unit does not take a host of each."""
    hosts = [
        replace(hgx(f"{c}-n0", "su1", f"{c}-leaf"), site="dc1", cluster=c, pod=f"pod:{c}-spine") for c in ["c1", "c2"]
    ]
    answer = place_shape(parse_shape(f"tp=8 dp=2 job-in={job_in}:required"), hosts)
    assert not isinstance(answer, ShapedPlacement), answer
    assert any(f"the most is 1 in {unit}" in r.message for r in answer), answer


def test_a_host_without_a_rail0_cable_shares_its_units_leaf() -> None:
    """Rail-optimised unit: every host reaches one leaf per rail; n2's rail-0 NIC has no cable.
    n2 meets the others on rails 1-7 (one IB hop), so a job kept to one leaf may use all three;
    keyed by its first leaf (rail 1) it was a leaf of its own."""
    rails = [f"su1-r{i}" for i in range(8)]
    hosts = [replace(hgx(f"su1-n{j}", "su1", "su1"), leaves=rails[1:] if j == 2 else rails) for j in range(3)]
    p = placed(parse_shape("tp=8 dp=3 job-in=leaf:required"), hosts)
    assert p.job_unit == "su1-r1" and {r.host for r in p.ranks} == {"su1-n0", "su1-n1", "su1-n2"}
    # Every host keyed by a leaf is cabled to it; without n2 the unit keeps its first leaf's name.
    assert placed(parse_shape("tp=8 dp=2 job-in=leaf:required"), hosts[:2]).job_unit == "su1-r0"


def test_a_preferred_job_level_short_in_every_cluster_says_so() -> None:
    """tp=8 dp=2, job level preferred: one group in each of two clusters. Widened to one cluster
    and still short, it said "the job level is required, so it was not widened" (a probe's case)."""
    hosts = [
        replace(hgx(f"{c}-n0", "su1", f"{c}-leaf"), site="dc1", cluster=c, pod=f"pod:{c}-spine") for c in ["c1", "c2"]
    ]
    answer = place_shape(parse_shape("tp=8 dp=2 job-in=leaf:preferred"), hosts)
    assert not isinstance(answer, ShapedPlacement)
    message = answer[0].message
    assert "required" not in message and "no cluster holds 2 groups of 8" in message and "never spans two" in message
    assert answer[0].nearest_feasible == "tp=8 dp=1"
