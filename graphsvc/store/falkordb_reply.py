"""FalkorDB's compact reply turned into rows, without falkordb-py's result parser.

falkordb-py parses every value of a reply through its own coroutine (an `await` per cell):
a placement read of ~1,200 GPU rows spent ~160 ms of client CPU there for ~20 ms of server
time (#15). The values placement reads are scalars, lists and maps; this parses those in
one plain loop. A reply holding anything else (a node, an edge, a path, a point, a vector,
a temporal value) is left to falkordb-py: `parse_rows` answers None for it.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from graphsvc.store.backend import Row

# The compact format's value types (FalkorDB's docs: "Result structure", compact).
_NULL, _STRING, _INTEGER, _BOOLEAN, _DOUBLE, _ARRAY, _MAP = 1, 2, 3, 4, 5, 6, 10


class _NotPlain(Exception):
    """A value this parser leaves to falkordb-py."""


def _value(cell: list[Any]) -> Any:
    kind, raw = cell[0], cell[1]
    if kind == _STRING:
        return raw if isinstance(raw, str) else raw.decode() if isinstance(raw, bytes) else str(raw)
    if kind == _INTEGER:
        return int(raw)
    if kind == _NULL:
        return None
    if kind == _DOUBLE:
        return float(raw)
    if kind == _BOOLEAN:
        return (raw.decode() if isinstance(raw, bytes) else raw) == "true"
    if kind == _ARRAY:
        return [_value(c) for c in raw]
    if kind == _MAP:
        return {str(raw[i]): _value(raw[i + 1]) for i in range(0, len(raw), 2)}
    raise _NotPlain(kind)


def _raise_errors(reply: list[Any]) -> None:
    """A query that fails while running answers its rows so far and the error last."""
    for part in (reply[0], reply[-1]):
        if isinstance(part, ResponseError):
            raise part


def parse_rows(reply: list[Any]) -> list[Row] | None:
    """Rows as plain dicts keyed by column; None when a value is not plain data."""
    _raise_errors(reply)
    if len(reply) < 3:  # statistics only: a write that returns nothing
        return []
    names = [str(column[1]) if isinstance(column, list | tuple) else str(column) for column in reply[0]]
    try:
        return [dict(zip(names, [_value(cell) for cell in row], strict=True)) for row in reply[1]]
    except _NotPlain:
        return None
