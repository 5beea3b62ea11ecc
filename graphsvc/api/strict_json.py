"""JSON as RFC 8259 defines it, for every request body (REST and GraphQL).

Python's parser accepts more than JSON, and each extra became a 500 or a reset connection:

- ``NaN`` and ``Infinity`` are not JSON numbers; once parsed they cannot be written back
  (the 422 answer echoing them failed) and must never be stored.
- A lone UTF-16 surrogate (``"\\ud800"``) is valid JSON escape syntax but names no
  character: it cannot be encoded as UTF-8, so the store or the answer failed on it.
- Nesting 50,000 deep overflowed the parser's (or GraphQL's) recursion.

Each is refused here with a message saying which, before any handler sees the body.

`parse_model` is the one-pass shortcut for a body that is one pydantic model: pydantic's own
JSON parser validates while it parses (an 11.6 KB host document: 170 us against 425 us for
`loads` then validation, #15). Where its parser could accept what `loads` refuses (NaN and
Infinity; any escape, for a surrogate's) or refuses anything at all, it answers None and the
caller takes the strict path, so every answer but a valid body's is the strict path's, word for
word.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

MAX_DEPTH = 64
"""Deepest nesting a body may have; the deepest real body (fabric facts) is about 6."""

_MAX_LETTERS = 256
"""N's and I's `parse_model` looks at before leaving a body to the strict path (a DGX H100
document has ~25)."""

# A \uD800-\uDFFF escape: the only way a JSON text can carry a surrogate (raw UTF-8 cannot).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class InvalidJSON(ValueError):
    """The body is not (strict) JSON; the message says why, for a 400 answer."""


def _refuse_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not a JSON number (RFC 8259); send a finite number or null")


def loads(data: str | bytes, *, check_depth: bool = False) -> Any:
    """Parse strict JSON. `check_depth` also walks the value to bound its nesting (small bodies)."""
    try:
        value = json.loads(data, parse_constant=_refuse_constant)
    except RecursionError:
        raise InvalidJSON(f"JSON nested too deeply (the limit is {MAX_DEPTH} levels)") from None
    except UnicodeDecodeError:
        raise InvalidJSON("the body is not valid UTF-8") from None
    except (json.JSONDecodeError, InvalidJSON):
        raise
    except ValueError as err:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise InvalidJSON(f"a number too long to read ({err})") from None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    has_surrogate_escape = _SURROGATE_ESCAPE.search(raw) is not None
    if check_depth or has_surrogate_escape:
        check(value)
    return value


def parse_model(model: type[M], data: bytes) -> M | None:
    """The body validated as `model` in one pass, or None: then `loads` and the model's validation
    give the answer (a 400 or a 422, the same as without this shortcut). A body this accepts is
    strict JSON (pydantic's parser is RFC 8259's but for NaN and Infinity, left to the strict
    path with any escape; it refuses invalid UTF-8 itself) and validates to the model `loads` then
    validation would give: the input is the same JSON value, and no body model is strict."""
    if _may_hold_what_loads_refuses(data):
        return None
    try:
        return model.model_validate_json(data)
    except ValidationError:
        return None


def _may_hold_what_loads_refuses(data: bytes) -> bool:
    """A NaN or Infinity token (pydantic's parser accepts both) or any escape (a surrogate escape
    is judged by the strict path, pairs too), anywhere, strings included: such a body merely takes
    the strict path. Single-byte searches: ~5 us for a 12 KB body, against ~60 us for a regular
    expression or ~20 us for substring tests. A body with many N's or I's goes the strict way
    too, rather than cost a Python step per letter (a hostile body is all N's)."""
    if b"\\" in data:
        return True
    steps = 0
    for first, token in ((b"N", b"NaN"), (b"I", b"Infinity")):
        at = data.find(first)
        while at >= 0:
            steps += 1
            if steps > _MAX_LETTERS or data.startswith(token, at):
                return True
            at = data.find(first, at + 1)
    return False


def check(value: Any) -> None:
    """Refuse lone surrogates in any string or key, and nesting deeper than MAX_DEPTH.

    Iterative, so a hostile depth cannot overflow the stack of the check itself.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise InvalidJSON(f"JSON nested too deeply (the limit is {MAX_DEPTH} levels)")
            if isinstance(item, dict):
                for key, child in item.items():
                    _check_text(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidJSON(
            f"a string holds a lone UTF-16 surrogate (\\u{ord(text[err.start]):04x}), which is not a character"
        ) from None


def safe_text(text: str) -> str:
    """The text with any lone surrogate escaped, so an error message can always be encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
