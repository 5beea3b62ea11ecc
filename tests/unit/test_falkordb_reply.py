"""FalkorDB's compact replies parsed without falkordb-py (graphsvc/store/falkordb_reply.py): every
plain value type, nested lists and maps, statistics-only replies, errors, and the fallback for
values that are not plain data. The integration suite reads every query through it on FalkorDB."""

from __future__ import annotations

from typing import Any

import pytest
from redis.exceptions import ResponseError

from graphsvc.store.falkordb_reply import parse_rows

STATS = ["Cached execution: 1", "Query internal execution time: 0.1 milliseconds"]


def reply(names: list[str], *rows: list[Any]) -> list[object]:
    return [[[1, n] for n in names], list(rows), STATS]


def test_every_plain_type() -> None:
    row = [[2, "h1"], [3, 42], [4, "true"], [4, "false"], [5, "2.5"], [1, None]]
    assert parse_rows(reply(["s", "i", "t", "f", "d", "n"], row)) == [
        {"s": "h1", "i": 42, "t": True, "f": False, "d": 2.5, "n": None}
    ]


def test_nested_lists_and_maps() -> None:
    gpus = [6, [[10, ["uuid", [2, "GPU-1"], "peers", [6, [[6, [[2, "GPU-2"], [5, "900"]]]]]]], [1, None]]]
    assert parse_rows(reply(["gpus"], [gpus])) == [{"gpus": [{"uuid": "GPU-1", "peers": [["GPU-2", 900.0]]}, None]}]


def test_bytes_are_decoded() -> None:
    assert parse_rows(reply(["s", "b"], [[2, b"caf\xc3\xa9"], [4, b"true"]])) == [{"s": "café", "b": True}]


def test_a_write_without_rows() -> None:
    assert parse_rows([STATS]) == []


def test_no_rows() -> None:
    assert parse_rows(reply(["host"])) == []


def test_a_node_is_left_to_falkordb_py() -> None:
    assert parse_rows(reply(["n"], [[8, [1, [0], [[0, 2, "x"]]]]])) is None


@pytest.mark.parametrize("where", ["first", "last"])
def test_errors_are_raised(where: str) -> None:
    error = ResponseError("Query timed out")
    parts = [error, STATS] if where == "first" else [[[1, "n"]], [[[3, 1]]], error]
    with pytest.raises(ResponseError, match="timed out"):
        parse_rows(parts)
