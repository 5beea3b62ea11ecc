"""GraphQL execution with plain objects completed in one step.

A placement answer is mostly plain data: 32 GPUs each with `uuid` and `host { name }`, a few
hundred fields per answer. graphql-core completes every one of them in the general way: a path
entry, a ResolveInfo, the field's resolver, then a walk through completion by type. That is
~2 ms of a multi-host answer's ~10 ms (docs/benchmarks.md, Placement latency), where REST
answers the same request without it.

Here an object whose selected fields are all plain (a stored attribute: no resolver function,
no permission, no field extension, no arguments; a scalar, an enum, another such object or a
list of them; nothing deferred, no middleware) is completed by reading the attributes directly,
with a plan built once per selection per request. Anything else, and any value the plan cannot
take as is (a null where the schema says non-null, a scalar that does not serialise, an error
value, an awaitable, a list that is not a list or tuple, a read that raises), goes the general
way from the start of that object, so errors, their paths and messages are graphql-core's own.
That way reads the object's attributes again: the sources here are frozen dataclasses, whose
reads change nothing (a property with side effects would run twice).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLList,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLScalarType,
    GraphQLString,
    Undefined,
    get_nullable_type,
    is_non_null_type,
)
from graphql.execution.collect_fields import FieldDetailsList, GroupedFieldSet
from graphql.pyutils import AwaitableOrValue, Path
from strawberry.execution import optimized_is_awaitable
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

# One selected field of a plain object: its response name, how it is read from the source, whether it is
# non-null, whether it is a list and whether the list's items are non-null, how a scalar or
# enum is serialised (leaves) and the nested plan (objects).
_Step = tuple[str, Callable[..., Any], bool, bool, bool, Callable[[Any], Any] | None, "list[_Step] | None"]


class _NotPlain(Exception):
    """A value the plan does not take as is: the object is completed the general way."""


def _complete(plan: list[_Step], source: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, read, non_null, is_list, items_non_null, serialise, nested in plan:
        value = read(source)
        if value is None:
            if non_null:
                raise _NotPlain
            out[name] = None
        elif not is_list:
            out[name] = _one(value, True, serialise, nested)
        elif isinstance(value, list | tuple):
            out[name] = [_one(item, items_non_null, serialise, nested) for item in value]
        else:  # another iterable (a generator, an async one): the general way
            raise _NotPlain
    return out


# Values graphql-core takes as they are: anything else is checked for what it would treat first.
_BUILTIN_SCALARS = frozenset({str, int, float, bool})
_SERIALISE_STRING = GraphQLString.coerce_output_value


def _one(value: Any, non_null: bool, serialise: Callable[[Any], Any] | None, nested: list[_Step] | None) -> Any:
    if value is None:
        if non_null:
            raise _NotPlain
        return None
    # An error value is raised as the field's error, an awaitable awaited, Undefined a null:
    # the general way does each (a scalar that takes anything, such as JSON, would not refuse them).
    # Awaitable as the general way decides it: strawberry's check (the context's `is_awaitable`,
    # `_plan` makes sure), which asks the value itself for `__await__` (a proxy can answer).
    if type(value) not in _BUILTIN_SCALARS and (
        value is Undefined or isinstance(value, Exception) or optimized_is_awaitable(value)
    ):
        raise _NotPlain
    if nested is not None:
        return _complete(nested, value)
    if type(value) is str and serialise is _SERIALISE_STRING:  # what serialize_string returns for a str
        return value
    assert serialise is not None
    serialised = serialise(value)
    if serialised is None or serialised is Undefined:
        raise _NotPlain
    return serialised


class PlainObjectsExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, with plain objects completed in one step (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Keyed like graphql-core's own subfield memo: the selection list's identity, the list
        # kept alive beside its plan so the id cannot be reused while the request runs.
        self._plans: dict[tuple[GraphQLObjectType, int], tuple[FieldDetailsList, list[_Step] | None]] = {}

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[dict[str, Any]]:
        if position_context is None:
            plan = self._plan(return_type, field_details_list)
            if plan is not None:
                try:
                    return _complete(plan, result)
                except Exception:  # noqa: BLE001, S110 (the general way below meets it and reports it)
                    pass
        return super().complete_object_value(return_type, field_details_list, info, path, result, position_context)

    def _plan(self, object_type: GraphQLObjectType, field_details_list: FieldDetailsList) -> list[_Step] | None:
        key = (object_type, id(field_details_list))
        cached = self._plans.get(key)
        if cached is not None:
            return cached[1]
        plan: list[_Step] | None = None
        middleware = self.middleware_manager
        # Strawberry always passes a manager; it holds the extensions that hook each resolver.
        if (
            (middleware is None or not middleware.middlewares)
            and object_type.is_type_of is None
            and self.is_awaitable is optimized_is_awaitable  # what `_one` checks values with
        ):
            grouped, defer_usages, _ = self.collect_subfields(object_type, field_details_list)
            if not defer_usages:
                plan = self._steps(object_type, grouped)
        self._plans[key] = (field_details_list, plan)
        return plan

    def _steps(self, object_type: GraphQLObjectType, grouped: GroupedFieldSet) -> list[_Step] | None:
        steps: list[_Step] = []
        for response_name, details in grouped.items():
            field = self.schema.get_field(object_type, details[0].node.name.value)
            if field is None or field.args or any(d.node.arguments or d.node.directives for d in details):
                return None
            read = _reader(field)
            if read is None:
                return None
            non_null = is_non_null_type(field.type)
            named = get_nullable_type(field.type)
            is_list = items_non_null = False
            if isinstance(named, GraphQLList):
                is_list, items_non_null = True, is_non_null_type(named.of_type)
                named = get_nullable_type(named.of_type)
            if isinstance(named, GraphQLScalarType | GraphQLEnumType):
                steps.append((response_name, read, non_null, is_list, items_non_null, named.coerce_output_value, None))
            elif isinstance(named, GraphQLObjectType) and (nested := self._plan(named, details)) is not None:
                steps.append((response_name, read, non_null, is_list, items_non_null, None, nested))
            else:  # lists of lists, interfaces, unions, objects that are not plain: the general way
                return None
        return steps


def _reader(field: GraphQLField) -> Callable[[Any], Any] | None:
    """How a plain field is read from its source, or None: not plain. A strawberry field is
    plain when it has no resolver function and no extensions (permissions are one): strawberry
    then reads the attribute with its default resolver, and getattr is read here directly."""
    definition = field.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    resolve = field.resolve
    if not isinstance(definition, StrawberryField) or not definition.is_basic_field or resolve is None:
        return None
    if definition.default_resolver is getattr:
        return attrgetter(definition.python_name)
    return lambda source: resolve(source, None)
