"""Plain objects completed in one step (graphsvc.api.graphql.executor): the same answers and the
same errors as graphql-core's general way, on chosen queries and on random ones, and the general
way skipped where the selection is plain."""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

import strawberry
from graphql import ExecutionResult, Undefined
from hypothesis import given, settings
from hypothesis import strategies as st
from strawberry.extensions import FieldExtension
from strawberry.permission import BasePermission
from strawberry.scalars import JSON

from graphsvc.api.graphql.executor import PlainObjectsExecutionContext


@strawberry.enum
class Health(enum.Enum):
    OK = "ok"
    FAILED = "failed"


@strawberry.type
class HostRef:
    name: str
    rack: str | None = None


@strawberry.type
class Gpu:
    uuid: str
    index: int
    health: Health
    host: HostRef
    memory_mib: int | None = None
    tags: list[str] = field(default_factory=list)

    @strawberry.field
    def label(self) -> str:
        return f"{self.host.name}/{self.index}"


@strawberry.type
class Candidate:
    score: float
    gpus: list[Gpu]
    maybe_gpus: list[Gpu | None] | None = None


@dataclass
class Counted:
    """How often each context took the general way for a field."""

    fields: int = 0


class CountingPlain(PlainObjectsExecutionContext):
    counted = Counted()

    def execute_field(self, *args: Any, **kwargs: Any) -> Any:
        CountingPlain.counted.fields += 1
        return super().execute_field(*args, **kwargs)


def _gpu(i: int, *, host: Any = None, health: Any = Health.OK, uuid: Any = "") -> Gpu:
    return Gpu(
        uuid=uuid if uuid != "" else f"GPU-{i}",
        index=i,
        health=health,
        host=HostRef(name=f"h{i // 4}", rack="r1") if host is None else host,
        memory_mib=81559 if i % 2 else None,
        tags=["a", "b"][: i % 3],
    )


CANDIDATES: list[Candidate] = []


@strawberry.type
class Query:
    @strawberry.field
    def candidates(self) -> list[Candidate]:
        return CANDIDATES


PLAIN = strawberry.Schema(query=Query, execution_context_class=CountingPlain)
GENERAL = strawberry.Schema(query=Query)


def _both(query: str) -> tuple[ExecutionResult, ExecutionResult]:
    async def run() -> tuple[Any, Any]:
        return await PLAIN.execute(query), await GENERAL.execute(query)

    return asyncio.run(run())


def _same(query: str) -> ExecutionResult:
    plain, general = _both(query)
    assert plain.data == general.data
    assert [e.formatted for e in plain.errors or []] == [e.formatted for e in general.errors or []]
    return plain


def test_a_plain_selection_is_completed_without_the_general_way() -> None:
    CANDIDATES[:] = [Candidate(score=1.5, gpus=[_gpu(i) for i in range(8)])]
    CountingPlain.counted.fields = 0
    result = _same("{ candidates { score gpus { uuid index health memoryMib tags host { name rack } } } }")
    assert result.data is not None
    assert result.data["candidates"][0]["gpus"][1] == {
        "uuid": "GPU-1",
        "index": 1,
        "health": "OK",
        "memoryMib": 81559,
        "tags": ["a"],
        "host": {"name": "h0", "rack": "r1"},
    }
    assert CountingPlain.counted.fields == 1  # the root field only: every candidate in one step


def test_a_field_with_a_resolver_takes_the_general_way_for_its_object_only() -> None:
    CANDIDATES[:] = [Candidate(score=1.0, gpus=[_gpu(i) for i in range(3)])]
    CountingPlain.counted.fields = 0
    _same("{ candidates { score gpus { label uuid host { name } } } }")
    # root + score + gpus, then per GPU label, uuid, host (its HostRef in one step): 3 + 3 * 3
    assert CountingPlain.counted.fields == 12


QUERIES = [
    "{ candidates { gpus { uuid } } }",
    "{ candidates { s: score g: gpus { u: uuid h: host { n: name } } } }",
    "{ candidates { ...C } } fragment C on Candidate { score gpus { ...G } } fragment G on Gpu { uuid host { name } }",
    "{ candidates { gpus { uuid uuid host { name } host { rack } } } }",
    "{ candidates { gpus { uuid @skip(if: true) index @include(if: true) } } }",
    "{ candidates { __typename gpus { __typename uuid } } }",
    "{ candidates { maybeGpus { uuid host { name } } } }",
]


def test_chosen_queries_answer_as_the_general_way() -> None:
    CANDIDATES[:] = [
        Candidate(score=2.0, gpus=[_gpu(i) for i in range(5)], maybe_gpus=[_gpu(9), None]),
        Candidate(score=1.0, gpus=[]),
    ]
    for query in QUERIES:
        _same(query)


def test_bad_values_give_graphql_cores_own_errors() -> None:
    """A null where the schema says non-null, a value an Int cannot hold, an enum value that is
    not one: the object goes the general way, and the error, its path and the nulls are the same."""
    for bad in (
        _gpu(1, uuid=None),
        _gpu(2, host=HostRef(name=None)),  # type: ignore[arg-type]
        Gpu(uuid="x", index=2**40, health=Health.OK, host=HostRef(name="h")),
        _gpu(3, health="broken"),
    ):
        CANDIDATES[:] = [Candidate(score=1.0, gpus=[_gpu(0), bad])]
        result = _same("{ candidates { score gpus { uuid index health host { name } } } }")
        assert result.errors
    CANDIDATES[:] = [Candidate(score=1.0, gpus=[_gpu(0), None])]  # type: ignore[list-item]
    assert _same("{ candidates { gpus { uuid } } }").errors  # a null item in a list of non-null


def test_a_list_that_is_not_a_list_or_tuple_is_read_once_the_general_way() -> None:
    """A generator can be read only once: the plan leaves it unread for the general way, which
    reports its null item where it is."""
    answers = []
    for schema in (PLAIN, GENERAL):
        gpu = _gpu(0)
        gpu.tags = (tag for tag in ["a", None])  # type: ignore[assignment]
        CANDIDATES[:] = [Candidate(score=1.0, gpus=[gpu])]
        result = asyncio.run(schema.execute("{ candidates { gpus { tags } } }"))
        answers.append((result.data, [e.formatted for e in result.errors or []]))
    assert answers[0] == answers[1]
    assert answers[0][1][0]["path"] == ["candidates", 0, "gpus", 0, "tags", 1]


SCALARS = {"Gpu": ["uuid", "index", "health", "memoryMib", "tags", "label", "__typename"], "HostRef": ["name", "rack"]}


@st.composite
def _selection(draw: st.DrawFn, type_name: str, depth: int = 0) -> str:
    names = draw(st.lists(st.sampled_from(SCALARS[type_name]), min_size=1, max_size=4))
    parts = [f"{draw(st.sampled_from(['', 'a: ', 'b: ']))}{name}" for name in names]
    if type_name == "Gpu" and draw(st.booleans()):
        parts.append("host { " + draw(_selection("HostRef", depth + 1)) + " }")
    if draw(st.booleans()):
        parts.append(f"... on {type_name} {{ {draw(st.sampled_from(SCALARS[type_name]))} }}")
    return " ".join(parts)


@st.composite
def _gpus(draw: st.DrawFn) -> list[Gpu | None]:
    out: list[Gpu | None] = []
    for i in range(draw(st.integers(0, 4))):
        broken = draw(st.sampled_from(["", "", "", "uuid", "host", "index", "null"]))
        if broken == "null":
            out.append(None)
        elif broken == "uuid":
            out.append(_gpu(i, uuid=None))
        elif broken == "host":
            out.append(_gpu(i, host=HostRef(name=None)))  # type: ignore[arg-type]
        elif broken == "index":
            out.append(Gpu(uuid="x", index=2**40, health=Health.OK, host=HostRef(name="h")))
        else:
            out.append(_gpu(i))
    return out


@settings(max_examples=150, deadline=None)
@given(selection=_selection("Gpu"), gpus=_gpus(), listed=st.sampled_from(["gpus", "maybeGpus"]))
def test_random_selections_and_values_answer_as_the_general_way(
    selection: str, gpus: list[Gpu | None], listed: str
) -> None:
    CANDIDATES[:] = [Candidate(score=1.0, gpus=gpus, maybe_gpus=[*gpus, None])]  # type: ignore[arg-type]
    _same(f"{{ candidates {{ score {listed} {{ {selection} }} }} }}")


class _Deny(BasePermission):
    message = "not allowed"

    def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        return False


class _Upper(FieldExtension):
    def resolve(self, next_: Any, source: Any, info: Any, **kwargs: Any) -> Any:
        return str(next_(source, info, **kwargs)).upper()


@strawberry.type
class Guarded:
    name: str
    token: str | None = strawberry.field(default=None, permission_classes=[_Deny])
    shout: str = strawberry.field(default="", extensions=[_Upper()])
    blob: JSON | None = None
    inner: HostRef | None = None


GUARDED: list[Guarded] = []
SKIPPED_ALL = "{ guarded { inner { name @skip(if: true) } } }"  # an empty plan: the value alone decides


@strawberry.type
class GuardedQuery:
    @strawberry.field
    def guarded(self) -> list[Guarded]:
        return GUARDED


def test_permissions_extensions_and_special_values_take_the_general_way() -> None:
    """A permission or a field extension on a field without a resolver function still runs; an
    error value, an awaitable and Undefined are what graphql-core makes of them, even under a
    scalar that would serialise anything (JSON)."""

    async def later() -> dict[str, int]:
        return {"a": 1}

    plain = strawberry.Schema(query=GuardedQuery, execution_context_class=PlainObjectsExecutionContext)
    general = strawberry.Schema(query=GuardedQuery)
    cases: list[tuple[str, Callable[[], Guarded]]] = [
        ("{ guarded { name token } }", lambda: Guarded(name="n", token="TOP-SECRET", shout="x")),
        ("{ guarded { name shout } }", lambda: Guarded(name="n", shout="hello")),
        ("{ guarded { blob } }", lambda: Guarded(name="n", shout="x", blob=cast(JSON, ValueError("bad")))),
        ("{ guarded { blob } }", lambda: Guarded(name="n", shout="x", blob=cast(JSON, later()))),
        (
            "{ guarded { inner { name @skip(if: true) } } }",
            lambda: Guarded(name="n", shout="x", inner=cast(HostRef, Undefined)),
        ),
        (
            "{ guarded { inner { name @skip(if: true) } } }",
            lambda: Guarded(name="n", shout="x", inner=cast(HostRef, ValueError())),
        ),
    ]
    for query, make in cases:
        answers = []
        for schema in (plain, general):
            GUARDED[:] = [make()]  # a fresh value per schema: a coroutine is awaited once
            result = asyncio.run(schema.execute(query))
            answers.append((result.data, [e.formatted for e in result.errors or []]))
        assert answers[0] == answers[1], query
    assert answers[0] == ({"guarded": [{"inner": None}]}, [answers[0][1][0]])  # the last: an error, not {}


class Forward:
    """A proxy that forwards any attribute it lacks, `__await__` among them, to its target."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def __str__(self) -> str:
        return str(self._target)


class Lazy(Forward):
    """A lazy proxy as Django's or wrapt's: isinstance() sees its target's class too."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._target)


def test_proxies_answer_as_the_general_way() -> None:
    """A value is checked as the general way checks it, the value itself asked (a review of stop 58
    found a check by type wave through a proxy to an error or a coroutine once a proxy to a plain
    object had passed; and a proxy that only forwards `__await__` is awaited the general way): a
    proxy to a plain object, an error, a coroutine and a plain object again, in turn."""

    class Plain:
        def __str__(self) -> str:
            return "plain"

    async def later() -> str:
        return "later"

    plain = strawberry.Schema(query=GuardedQuery, execution_context_class=PlainObjectsExecutionContext)
    general = strawberry.Schema(query=GuardedQuery)
    targets: list[Callable[[], Any]] = [Plain, lambda: ValueError("boom"), later, Plain]
    for query in ("{ guarded { name } }", "{ guarded { blob } }"):
        for proxy, make in [(proxy, make) for proxy in (Lazy, Forward) for make in targets]:
            answers = []
            for schema in (plain, general):
                value = proxy(make())  # a fresh value per schema: a coroutine is awaited once
                GUARDED[:] = [Guarded(name=cast(str, value), blob=cast(JSON, value))]
                result = asyncio.run(schema.execute(query))
                target = object.__getattribute__(value, "_target")
                if inspect.iscoroutine(target):
                    target.close()  # neither way awaits a proxy's coroutine
                # A JSON answer holds the proxy itself: compared by its type's name and its text.
                data = json.dumps(result.data, default=lambda o: f"{type(o).__name__}: {o}")
                answers.append((data, [e.formatted for e in result.errors or []]))
            assert answers[0] == answers[1], (query, answers)


def _isawaitable(value: Any) -> TypeGuard[Awaitable[Any]]:
    return inspect.isawaitable(value)


def test_values_are_checked_with_the_contexts_own_awaitable_test() -> None:
    """The plan checks values with strawberry's awaitable test; a context given another one
    completes every object the general way."""

    class OwnTest(CountingPlain):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.is_awaitable = _isawaitable  # not strawberry's

    query = "{ candidates { gpus { uuid } } }"
    CANDIDATES[:] = [Candidate(score=1.0, gpus=[_gpu(0), _gpu(1)])]
    CountingPlain.counted.fields = 0
    assert asyncio.run(PLAIN.execute(query)).data == {"candidates": [{"gpus": [{"uuid": "GPU-0"}, {"uuid": "GPU-1"}]}]}
    assert CountingPlain.counted.fields == 1  # the root field only: the rest in one step
    CountingPlain.counted.fields = 0
    own = strawberry.Schema(query=Query, execution_context_class=OwnTest)
    assert asyncio.run(own.execute(query)).data == {"candidates": [{"gpus": [{"uuid": "GPU-0"}, {"uuid": "GPU-1"}]}]}
    assert CountingPlain.counted.fields == 1 + 1 + 2  # candidates, its gpus, each uuid
