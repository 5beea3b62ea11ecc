"""JSON as RFC 8259 defines it, for every request body (REST and GraphQL).

Python's parser accepts more than JSON, and each extra became a 500 or a reset connection:

- ``NaN`` and ``Infinity`` are not JSON numbers; once parsed they cannot be written back
  (the 422 answer echoing them failed) and must never be stored.
- A lone UTF-16 surrogate (``"\\ud800"``) is valid JSON escape syntax but names no
  character: it cannot be encoded as UTF-8, so the store or the answer failed on it.
- Nesting 50,000 deep overflowed the parser's (or GraphQL's) recursion.
- A key twice in one object (``{"gpus": 8, "gpus": 1}``): RFC 8259 leaves its meaning open and
  every parser here kept the last, so a scheduler's reservation silently got 1 GPU. Refused at any
  depth (`DuplicateKey`: REST answers 422 naming the key's path, GraphQL 400).

Each is refused here with a message saying which, before any handler sees the body.

`parse_model` is the one-pass shortcut for a body that is one pydantic model: pydantic's own
JSON parser validates while it parses (an 11.6 KB host document: 170 us against 425 us for
`loads` then validation, #15). Where its parser could accept what `loads` refuses (NaN and
Infinity; any escape, for a surrogate's) or refuses anything at all, it answers None and the
caller takes the strict path, so every answer but a valid body's is the strict path's, word for
word. pydantic's parser keeps a repeated key's last value too: a body it accepted is certified to
repeat no key (`_members_certified`, from the model it built: ~30 us for an 11.6 KB host document;
else `_no_repeated_key`, a Rust parse and write: ~85 us), else the strict path answers.
"""

from __future__ import annotations

import json
import re
import sys
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, RootModel, ValidationError
from pydantic.functional_validators import AfterValidator, BeforeValidator, PlainValidator, WrapValidator
from pydantic_core import from_json, to_json

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


class DuplicateKey(InvalidJSON):
    """An object names a key twice. REST answers 422 (the body parses; what it says is ambiguous)
    with `path` as the field, GraphQL 400 as for any other refused body."""

    def __init__(self, path: tuple[str | int, ...]) -> None:
        self.path = path
        super().__init__(f"the key {safe_text(str(path[-1]))!r} appears twice in one object; send each key once")


def _refuse_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not a JSON number (RFC 8259); send a finite number or null")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict, refused when a key repeats (the C parser calls this per
    object: ~0.3 us each, a GraphQL request has a handful)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _child in pairs:
            if key in seen:
                raise DuplicateKey((key,))
            seen.add(key)
    return value


class _Members(list[tuple[str, Any]]):
    """An object's members as parsed, repeats kept: where a repeated key is, for the answer."""


def _located(data: str | bytes, found: DuplicateKey) -> DuplicateKey:
    """`found` with the path from the body's root to the first repeated key (depth first); the key
    alone where the body cannot be read again (a refusal after the repeat: deep nesting, NaN)."""
    try:
        root = json.loads(data, object_pairs_hook=_Members, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return found
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Members):
            seen: set[str] = set()
            for key, _child in item:
                if key in seen:
                    return DuplicateKey((*path, key))
                seen.add(key)
            stack.extend((child, (*path, key)) for key, child in reversed(item))
        elif isinstance(item, list):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(item))))
    return found


def loads(data: str | bytes, *, check_depth: bool = False) -> Any:
    """Parse strict JSON. `check_depth` also walks the value to bound its nesting (small bodies)."""
    try:
        value = json.loads(data, parse_constant=_refuse_constant, object_pairs_hook=_unique_pairs)
    except DuplicateKey as found:
        raise _located(data, found) from None
    except RecursionError:
        raise InvalidJSON(f"JSON nested too deeply (the limit is {MAX_DEPTH} levels)") from None
    except UnicodeDecodeError:
        raise InvalidJSON("the body is not valid UTF-8") from None
    except (json.JSONDecodeError, InvalidJSON):
        raise
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        # Not the interpreter's own text, which told the client to call sys.set_int_max_str_digits().
        raise InvalidJSON(f"a number too long to read (more than {sys.get_int_max_str_digits()} digits)") from None
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
        body = model.model_validate_json(data)
    except ValidationError:
        return None
    return body if _members_certified(body, data) or _no_repeated_key(data) else None


def _no_repeated_key(data: bytes) -> bool:
    """No object of this body (valid JSON, no escape: `_may_hold_what_loads_refuses`) names a key
    twice. Outside strings a colon is a member's; inside, strings without escapes keep their
    colons when parsed and written again. Parsed, a repeated member is gone (its colon, its key's
    and earlier value's), so the text written again has fewer colons exactly when a key repeats.
    Rust's parse and write: for a 12.7 KB host document ~40% of `model_validate_json`'s time,
    against ~60-80% for the C `json` parser (with `_unique_pairs`, or any Python hook per object)."""
    try:
        again = to_json(from_json(data, cache_strings="keys"))  # keys: the cheapest of the three here
    except ValueError:  # nothing the validation above accepted; judged by the strict path if so
        return False
    return data.count(b":") == again.count(b":")


_JSON_WHITESPACE = b" \t\n\r"

Nested = tuple[tuple[str, bool, type[BaseModel]], ...]
"""A countable model's fields that hold models: (name, a list of them, the model)."""

_COUNTABLE: dict[type[BaseModel], Nested | None] = {}
_FIELD_VALIDATORS = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)


def _members_certified(body: BaseModel, data: bytes) -> bool:
    """No object of `data` (valid JSON, no escape, validated as `body`) names a key twice, read from
    the model instead of parsing the text again; False where this cannot tell (`_no_repeated_key`
    judges then).

    Why it holds. A body without escapes has a `"` only where a string opens or closes, and JSON
    whitespace (never part of a UTF-8 sequence) deleted from it leaves every quote where it was
    among the other bytes. In that text every member's key closes with `":`, so K, the members of
    all the body's objects, is at most C, the count of `":` (C also counts each string whose text
    opens with a colon once its spaces are gone). In a model of `_countable` (every field read by
    its own name, `extra="forbid"`, no validator or hook that could build an instance from anything
    but its own object) each model instance reached through the fields it was given was validated
    from an object of the body, one object each, and its `model_fields_set` is that object's
    distinct keys. So S, their sum, is at most D, the distinct keys of all the objects (an object
    held by a field of another type, say a dict, counts in D alone): S <= D <= K <= C. S == C gives
    D == K: no object repeats a key. A repeat, with any value, even the same, leaves S < C; so
    does a string opening with a colon (`_no_repeated_key` judges it, exactly). ~30 us for an
    11.6 KB host document against ~85 us for `_no_repeated_key` (#15); the single-pass deletion
    and count are C's, the walk visits each model once (~70 for a DGX H100)."""
    nested = _countable(type(body))
    if nested is None:
        return False
    return _distinct_keys(body, nested) == data.translate(None, _JSON_WHITESPACE).count(b'":')


def _distinct_keys(model: BaseModel, nested: Nested) -> int:
    """S above: the fields set of `model` and of every model reached through them."""
    given = model.__pydantic_fields_set__
    count = len(given)
    for name, many, kind in nested:
        if name not in given:
            continue
        value = getattr(model, name)
        inner = _COUNTABLE[kind]
        if value is None or inner is None:
            continue
        for item in value if many else (value,):
            if type(item) is kind:  # anything else counts nothing: S only gets smaller
                count += _distinct_keys(item, inner) if inner else len(item.__pydantic_fields_set__)
    return count


def _countable(model: type[BaseModel]) -> Nested | None:
    """The fields of `model` that hold models (each itself countable), or None where the fields
    set of its instances may not be their objects' distinct keys: a field read by another name
    (an alias), extra keys kept or ignored, a root model, a schema of its own, a model validator
    that runs before or around pydantic's (it may build the instance from anything; one that runs
    after returns the instance it was given, as pydantic asks and ours do), a post-init hook, or a
    field holding models with a validator of its own (it may return other instances). A field holding
    models other than as `M`, `M | None`, `list[M]` or `list[M] | None` is left out: its objects
    count in D alone. Computed once per model class; a class being computed counts as countable
    (a recursive model: the answer for it is the one being computed)."""
    if model in _COUNTABLE:
        return _COUNTABLE[model]
    _COUNTABLE[model] = ()
    answer = _nested_fields(model)
    _COUNTABLE[model] = answer
    if answer is None:
        return None
    if any(_countable(kind) is None for _name, _many, kind in answer):
        _COUNTABLE[model] = None
        return None
    return answer


def _nested_fields(model: type[BaseModel]) -> Nested | None:
    decorators = model.__pydantic_decorators__
    if (
        issubclass(model, RootModel)
        or model.model_config.get("extra") != "forbid"
        or model.__pydantic_post_init__ is not None
        or any("__get_pydantic_core_schema__" in vars(c) for c in model.__mro__[: model.__mro__.index(BaseModel)])
        or any(d.info.mode != "after" for d in decorators.model_validators.values())
    ):
        return None
    validated = {name for d in decorators.field_validators.values() for name in d.info.fields}
    nested: list[tuple[str, bool, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        if field.alias not in (None, name) or field.validation_alias not in (None, name):
            return None
        held = _held_model(field.annotation)
        if held is None:
            continue
        if name in validated or "*" in validated or any(isinstance(m, _FIELD_VALIDATORS) for m in field.metadata):
            return None
        nested.append((name, *held))
    return tuple(nested)


def _held_model(annotation: Any) -> tuple[bool, type[BaseModel]] | None:
    """(a list, the model) for `M`, `M | None`, `list[M]`, `list[M] | None`; None for any other
    annotation."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kept) != 1:
            return None
        annotation = kept[0]
    many = typing.get_origin(annotation) is list
    if many:
        (annotation,) = typing.get_args(annotation) or (None,)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return many, annotation
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
