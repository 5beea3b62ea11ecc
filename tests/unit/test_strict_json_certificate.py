"""`strict_json._members_certified`: a body pydantic accepted is certified to repeat no key from
the model it built and a count of the text (#15: ~30 us for a host document, against ~85 us for
parsing and writing it again). It must never pass a body where some object, at any depth, names a
key twice, whatever the value (the same one included: the model is then the same); where it cannot
tell, `_no_repeated_key` judges, so `parse_model` still answers None exactly for a repeat."""

from __future__ import annotations

import json
import random
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    field_validator,
    model_validator,
)
from topo_facts import HostFacts, HostMetrics

from graphsvc.api import strict_json
from tests.helpers import a100, as_json, h100, tray

FORBID = ConfigDict(extra="forbid")


class Leaf(BaseModel):
    model_config = FORBID
    a: str | None = None
    b: int | None = None


class Node(BaseModel):
    """Objects at any depth: models in a model, in lists of them, and objects no model holds."""

    model_config = FORBID
    a: str | None = None
    b: int | None = None
    one: Node | None = None
    many: list[Node] | None = None
    leaves: list[Leaf] = Field(default_factory=list)
    free: dict[str, Any] | None = None  # its objects' keys count in D alone: the model cannot see them
    texts: list[str] = Field(default_factory=list)


class Obj(list[tuple[str, str, Any]]):
    """A JSON object as written: (key, separator, value) members, repeats kept."""


# Colons, braces, brackets, commas, spaces and characters beyond ASCII; no quote or backslash (a
# body with an escape never reaches a certificate) and no N or I (NaN, Infinity: the strict path).
TEXT = st.text(st.sampled_from(["a", "b", ":", "{", "}", "[", "]", ",", " ", "é", "☃", "😀"]), max_size=6)
SEP = st.sampled_from([":", ": ", " :", " : ", "\n:\t", "\r\n :  "])


def obj(members: st.SearchStrategy[tuple[str, str, Any]], max_size: int = 5) -> st.SearchStrategy[Obj]:
    return st.lists(members, max_size=max_size).map(Obj)


FREE: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-9, 9) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | obj(st.tuples(TEXT, SEP, inner), max_size=4),
    max_leaves=8,
)
LEAF = obj(st.tuples(st.just("a"), SEP, TEXT) | st.tuples(st.just("b"), SEP, st.integers(-9, 9)), max_size=4)
NODE: st.SearchStrategy[Obj] = st.deferred(
    lambda: obj(
        st.tuples(st.just("a"), SEP, TEXT)
        | st.tuples(st.just("b"), SEP, st.integers(-9, 9))
        | st.tuples(st.just("one"), SEP, NODE)
        | st.tuples(st.just("many"), SEP, st.lists(NODE, max_size=3))
        | st.tuples(st.just("leaves"), SEP, st.lists(LEAF, max_size=3))
        | st.tuples(st.just("free"), SEP, obj(st.tuples(TEXT, SEP, FREE), max_size=4))
        | st.tuples(st.just("texts"), SEP, st.lists(TEXT, max_size=3))
    )
)


def render(value: Any) -> str:
    if isinstance(value, Obj):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}{sep}{render(v)}" for k, sep, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def repeats(value: Any) -> bool:
    if isinstance(value, Obj):
        keys = [k for k, _sep, _v in value]
        return len(set(keys)) < len(keys) or any(repeats(v) for _k, _sep, v in value)
    return isinstance(value, list) and any(repeats(v) for v in value)


def unseen(value: Any, *, held: bool = True) -> bool:
    """Whether the model cannot see some member: one of an object under `free`, or a string that
    opens with a colon once its spaces are gone (counted as a key would be)."""
    if isinstance(value, Obj):
        if not held and value:
            return True
        return any(unseen(v, held=held and k != "free") or unseen(k) for k, _sep, v in value)
    if isinstance(value, list):
        return any(unseen(v, held=held) for v in value)
    return isinstance(value, str) and value.replace(" ", "").startswith(":")


@settings(max_examples=400, deadline=None)
@given(NODE)
def test_the_model_certificate_never_passes_a_repeat(tree: Obj) -> None:
    data = render(tree).encode()
    model = Node.model_validate_json(data)  # pydantic keeps a repeated key's last value
    certified = strict_json._members_certified(model, data)
    if repeats(tree):
        assert not certified
    else:
        assert certified is not unseen(tree)  # it passes every body whose members the model sees
    assert (strict_json.parse_model(Node, data) is None) is repeats(tree)


def objects(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every object of a parsed document with its path, at every depth."""
    if isinstance(value, dict):
        found = [(path, value)]
        for key, child in value.items():
            found += objects(child, (*path, key))
        return found
    if isinstance(value, list):
        return [o for i, child in enumerate(value) for o in objects(child, (*path, i))]
    return []


def with_repeat(doc: dict[str, Any], rng: random.Random, same: bool) -> str:
    """The document as text with one member of one object (any depth) written twice: with the same
    value (the model is the one without the repeat), or first with another's value."""
    candidates = [(p, o) for p, o in objects(doc) if o]
    path, target = rng.choice(candidates)
    key = rng.choice(sorted(target))
    first = target[key]
    if not same:
        others = [o[key] for _p, o in objects(doc) if key in o and o[key] != target[key]]
        first = rng.choice(others) if others else first
    members = [(k, v) for k, v in target.items()]
    members.insert(rng.randrange(len(members) + 1), (key, first))
    marker = "REPEAT-HERE"
    parent: Any = doc
    for step in path[:-1]:
        parent = parent[step]
    if path:
        parent[path[-1]] = marker
        text = json.dumps(doc)
        parent[path[-1]] = target
    else:
        text = json.dumps(marker)
    written = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members) + "}"
    return text.replace(json.dumps(marker), written, 1)


DOCS = {
    "h100": as_json(h100("cert-a")),
    "a100": as_json(a100("cert-b")),
    "nvl72-tray": as_json(tray("cert-c", "clique-1")),
}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_a_host_document_is_certified_from_its_model(name: str) -> None:
    """Collectors' documents (compact, as `topo-collector run` writes them, or spaced) take the
    cheap certificate: it was no gain if they fell through to the parse."""
    for text in (json.dumps(DOCS[name]), HostFacts.model_validate(DOCS[name]).model_dump_json()):
        model = HostFacts.model_validate_json(text)
        assert strict_json._members_certified(model, text.encode())
        assert strict_json.parse_model(HostFacts, text.encode()) == model


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(DOCS)), seed=st.integers(0, 2**32), same=st.booleans())
def test_a_host_document_with_a_key_twice_is_never_certified(name: str, seed: int, same: bool) -> None:
    """A key repeated in any object of a real document (the host, a GPU, an NVLink, a NIC, an
    affinity...), with the same value or another: refused by both certificates and by the strict
    path."""
    text = with_repeat(json.loads(json.dumps(DOCS[name])), random.Random(seed), same)
    data = text.encode()
    with pytest.raises(strict_json.DuplicateKey):
        strict_json.loads(data)
    assert not strict_json._no_repeated_key(data)
    try:
        model = HostFacts.model_validate_json(data)
    except ValidationError:
        return  # another object's value that does not fit here: refused before any certificate
    assert not strict_json._members_certified(model, data)
    assert strict_json.parse_model(HostFacts, data) is None


def test_a_string_opening_with_a_colon_is_judged_by_the_parse() -> None:
    """Counted as a key would be (C > K), it leaves the body to `_no_repeated_key`: still taken."""
    doc = {**DOCS["h100"], "cpu_model": " :Xeon"}
    data = json.dumps(doc).encode()
    model = HostFacts.model_validate_json(data)
    assert not strict_json._members_certified(model, data)
    assert strict_json.parse_model(HostFacts, data) == model


def test_the_body_models_are_countable() -> None:
    assert strict_json._countable(HostFacts)
    assert strict_json._countable(HostMetrics)


class Aliased(BaseModel):
    model_config = FORBID
    a: int = Field(validation_alias=AliasChoices("a", "b"))


class Ignoring(BaseModel):
    a: int = 0


class Before(BaseModel):
    model_config = FORBID
    a: int = 0

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, value: Any) -> Any:
        return {"a": 1} if value == "one" else value


class HoldsBefore(BaseModel):
    model_config = FORBID
    inner: Before | None = None


class CheckedList(BaseModel):
    model_config = FORBID
    leaves: list[Leaf] = Field(default_factory=list)

    @field_validator("leaves")
    @classmethod
    def _rebuild(cls, leaves: list[Leaf]) -> list[Leaf]:
        return [Leaf(a="x", b=1) for _ in leaves]


class AnnotatedList(BaseModel):
    model_config = FORBID
    leaves: Annotated[list[Leaf], BeforeValidator(lambda v: v)] = Field(default_factory=list)


class PostInit(BaseModel):
    model_config = FORBID
    a: int = 0

    def model_post_init(self, context: Any, /) -> None:
        pass


class Rooted(RootModel[dict[str, int]]):
    pass


@pytest.mark.parametrize(
    "model", [Aliased, Ignoring, Before, HoldsBefore, CheckedList, AnnotatedList, PostInit, Rooted]
)
def test_a_model_whose_fields_set_may_not_be_its_keys_is_not_countable(model: type[BaseModel]) -> None:
    assert strict_json._countable(model) is None


def test_a_rebuilding_validator_would_have_passed_a_repeat() -> None:
    """Why `CheckedList` is refused: its validator's instances hold keys its body never sent, so
    counted they would cover for a repeat."""
    data = b'{"leaves": [{"a": "x", "a": "y"}]}'
    model = CheckedList.model_validate_json(data)
    assert sum(len(leaf.model_fields_set) for leaf in model.leaves) + 1 == data.count(b'":')
    assert strict_json.parse_model(CheckedList, data) is None
