"""Search ranking and natural name order, as tables."""

from __future__ import annotations

import pytest

from graphsvc.read.explorer import SearchHit, natural_key, pieces, rank, score


def test_pieces() -> None:
    assert pieces(" SU3-n17 ") == ["su3-n17", "su3", "n17"]
    assert pieces("") == []
    assert pieces("a") == ["a"]


def test_natural_order() -> None:
    nics = ["mlx5_10", "mlx5_3", "mlx5_0", "mlx5_11", "mlx5_1"]
    assert sorted(nics, key=natural_key) == ["mlx5_0", "mlx5_1", "mlx5_3", "mlx5_10", "mlx5_11"]


@pytest.mark.parametrize(
    ("text", "name", "low", "high"),
    [
        ("h100-su3-n17", "h100-su3-n17", 1.0, 1.0),
        ("su3-n17", "h100-su3-n17", 0.9, 0.9),
        ("u3-n1", "h100-su3-n17", 0.8, 0.8),
        ("su3-n17", "h100-su3-n18", 0.2, 0.5),  # shares "su3" only
        ("su3-n17", "h100-su1-n17", 0.2, 0.5),
        ("zzz", "h100-su1-n01", 0.0, 0.2),
    ],
)
def test_score(text: str, name: str, low: float, high: float) -> None:
    assert low <= score(text, name) <= high


def test_rank_puts_the_whole_match_first_then_natural_order() -> None:
    hits = [SearchHit("host", n, n, "", 0.0) for n in ["h100-su3-n18", "h100-su3-n17", "h100-su1-n17", "l40s-017"]]
    ranked = rank("su3-n17", hits, 3)
    assert ranked[0].name == "h100-su3-n17"
    assert len(ranked) == 3
