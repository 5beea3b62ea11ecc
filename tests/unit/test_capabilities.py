"""Capability constraints: one table row per rule, the text form, and the GraphQL input."""

from __future__ import annotations

import pytest

from graphsvc.placement.capabilities import CapabilityNeeds, capability_of, parse_cc
from graphsvc.placement.request import RequestError, format_request, parse_request

H100 = "NVIDIA H100 80GB HBM3"
H100_PCIE = "NVIDIA H100 PCIe"
GB200 = "NVIDIA GB200"
A100 = "NVIDIA A100-SXM4-80GB"
MI300X = "AMD Instinct MI300X"
L40S = "NVIDIA L40S"


@pytest.mark.parametrize(
    ("needs", "model", "unmet"),
    [
        (CapabilityNeeds(min_compute_capability=(9, 0)), H100, None),
        (CapabilityNeeds(min_compute_capability=(9, 0)), A100, "compute capability 8.0 < 9.0"),
        (CapabilityNeeds(min_compute_capability=(9, 0)), MI300X, "compute capability none (not NVIDIA) < 9.0"),
        (CapabilityNeeds(min_compute_capability=(10, 0)), GB200, None),
        (CapabilityNeeds(min_memory_bandwidth_gbps=3000), H100, None),  # SXM: 3,350 GB/s
        (CapabilityNeeds(min_memory_bandwidth_gbps=3000), H100_PCIE, "memory bandwidth 2000 GB/s < 3000"),
        (CapabilityNeeds(min_memory_bandwidth_gbps=5000), MI300X, None),
        (CapabilityNeeds(fp8=True), L40S, None),
        (CapabilityNeeds(fp8=True), A100, "no FP8"),
        (CapabilityNeeds(fp8=True), MI300X, None),
        (CapabilityNeeds(fp4=True), H100, "no FP4"),
        (CapabilityNeeds(fp4=True), GB200, None),
        (CapabilityNeeds(min_link_generation=5), GB200, None),
        (CapabilityNeeds(min_link_generation=5), H100, "scale-up link generation 4 < 5"),
        (CapabilityNeeds(min_link_generation=1), L40S, "scale-up link generation none < 1"),
        (CapabilityNeeds(fp8=True), "Some Future GPU", "'Some Future GPU': capabilities unknown"),
    ],
)
def test_rules(needs: CapabilityNeeds, model: str, unmet: str | None) -> None:
    assert needs.unmet(model) == unmet


def test_family_is_its_slowest_variant_unless_the_model_row_says() -> None:
    a100_40 = capability_of("NVIDIA A100-PCIE-40GB")
    a100_80 = capability_of(A100)
    assert a100_40 is not None and a100_80 is not None
    assert a100_40.memory_bandwidth_gbps == 1555.0 and a100_80.memory_bandwidth_gbps == 2039.0


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        ("8 cc>=9.0", CapabilityNeeds(min_compute_capability=(9, 0))),
        ("8 cc>=10", CapabilityNeeds(min_compute_capability=(10, 0))),
        ("8 mem-bw>=3000 fp8", CapabilityNeeds(min_memory_bandwidth_gbps=3000, fp8=True)),
        ("8 fp4 link-gen>=5", CapabilityNeeds(fp4=True, min_link_generation=5)),
    ],
)
def test_text_form(text: str, needs: CapabilityNeeds) -> None:
    req = parse_request(text)
    assert req.capabilities == needs
    assert parse_request(format_request(req)) == req


@pytest.mark.parametrize(
    ("text", "says"),
    [("8 cc>=nine", "not a compute capability"), ("8 cc=9.0", "use >="), ("8 link-gen>=0", "between 1 and 20"),
     ("8 fp16", "unknown option")],
)  # fmt: skip
def test_text_errors(text: str, says: str) -> None:
    with pytest.raises(RequestError) as err:
        parse_request(text)
    assert says in err.value.message


def test_no_needs_is_falsy() -> None:
    assert not CapabilityNeeds() and CapabilityNeeds(fp8=True)
    assert parse_cc("9.0") == (9, 0) and parse_cc("12") == (12, 0)
