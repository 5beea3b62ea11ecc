"""The candidate statements' model prefilter lists (engine.prefilter_params), as a table."""

from __future__ import annotations

from graphsvc.placement.engine import prefilter_params


def test_the_prefilter_lists_decide_known_ascii_models_only() -> None:
    known = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Ünusual GPU"]
    assert prefilter_params("", known) == {"prefilter_models": [], "known": [""]}
    assert prefilter_params("h100", known) == {
        "prefilter_models": ["NVIDIA H100 80GB HBM3"],
        "known": ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ""],
    }
    assert prefilter_params("nvidia", known)["prefilter_models"] == known[:2]
    assert prefilter_params("b200", known)["prefilter_models"] == []
