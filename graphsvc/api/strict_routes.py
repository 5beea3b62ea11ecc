"""FastAPI and strawberry, parsing request bodies with `strict_json` instead of `json.loads`."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from cross_web import HTTPException as GraphQLHTTPException
from fastapi import HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel
from strawberry.fastapi import GraphQLRouter
from strawberry.http.types import QueryParams

from graphsvc.api import strict_json

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class RepeatedKey(HTTPException):
    """A body's `strict_json.DuplicateKey` on its way out of FastAPI's body reading, which lets only
    an HTTPException through (anything else raised there becomes its 400): `refusing_repeated_keys`
    answers it as the 422 of any invalid field."""

    def __init__(self, found: strict_json.DuplicateKey) -> None:
        super().__init__(status_code=422, detail=str(found))
        self.found = found


class StrictJSONRequest(Request):
    """`json()` is strict JSON nested at most strict_json.MAX_DEPTH deep (a valid body that is one
    model takes `one_pass_route`'s short way, parsed and validated in one pass there: no body model
    nests anywhere near that deep, so a deeper body fails its validation and comes here). Without
    the depth check a body 65-990 levels deep was read and answered 422 for its shape, and only
    Python's recursion limit (~1,000) gave the 400 docs/deploy.md promises past 64 (a probe, stop 73)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = strict_json.loads(await self.body(), check_depth=True)
            except strict_json.DuplicateKey as found:
                raise RepeatedKey(found) from None
            except strict_json.InvalidJSON as err:
                raise HTTPException(status_code=400, detail=f"invalid JSON: {err}") from None
        return self._json


def refusing_repeated_keys(handler: Handler) -> Handler:
    """`handler`, answering a body with a repeated key as a 422 naming the key's path (the app's
    RequestValidationError handler writes it: the shape and `fields` of every other 422)."""

    async def refusing_handler(request: Request) -> Response:
        try:
            return await handler(request)
        except RepeatedKey as err:
            problem = {"type": "duplicate_key", "loc": ("body", *err.found.path), "msg": str(err.found), "input": None}
            raise RequestValidationError([problem]) from None

    return refusing_handler


class StrictJSONRoute(APIRoute):
    """A route whose JSON body is strict JSON: NaN, lone surrogates and deep nesting are a 400, a
    key repeated in an object a 422."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return refusing_repeated_keys(strict_handler)


def one_body_model(route: Any) -> type[BaseModel] | None:
    """The model a route's body is (an `APIRoute`, or FastAPI's context of an included one), where
    FastAPI validates the whole body as that one model (and would not validate an instance of it
    again: `revalidate_instances` 'never'), so `one_pass_route` may hand the endpoint the model
    `strict_json.parse_model` gives; else None."""
    field = route.body_field
    if field is None or route._embed_body_fields:
        return None
    model = field.field_info.annotation
    if not (isinstance(model, type) and issubclass(model, BaseModel)) or field.field_info.metadata:
        return None
    if model.model_config.get("revalidate_instances", "never") != "never":
        return None
    return model


class StrictGraphQLRouter(GraphQLRouter[Any, None]):
    """GraphQL requests and variables as strict JSON, nested at most strict_json.MAX_DEPTH deep."""

    def parse_json(self, data: str | bytes) -> Any:
        """HTTP bodies (and a multipart request's parts): a 400 that says what is wrong. A request
        is an object (a list is a batch, refused by strawberry's own check); strawberry reads a
        body's fields with .get() and failed on any other JSON value, `null` included (a 500)."""
        value = self._loads(data)
        if not isinstance(value, dict | list):
            raise GraphQLHTTPException(400, "invalid JSON: a GraphQL request is a JSON object")
        return value

    def parse_query_params(self, params: QueryParams) -> dict[str, Any]:
        """A GET's `variables` and `extensions`: strict JSON too, where `null` is allowed (no
        variables) and any other non-object is strawberry's own 400 ("must be an object")."""
        parsed: dict[str, Any] = dict(params)
        for name in ("variables", "extensions"):
            if parsed.get(name):
                parsed[name] = self._loads(parsed[name])
        return parsed

    @staticmethod
    def _loads(data: str | bytes) -> Any:
        try:
            return strict_json.loads(data, check_depth=True)
        except strict_json.InvalidJSON as err:
            raise GraphQLHTTPException(400, f"invalid JSON: {err}") from None
        except json.JSONDecodeError:
            raise GraphQLHTTPException(400, "Unable to parse request body as JSON") from None

    def decode_json(self, data: str | bytes) -> object:
        """Websocket messages: strawberry closes the socket (4400) on a JSONDecodeError."""
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        try:
            value = strict_json.loads(data, check_depth=True)
        except strict_json.InvalidJSON as err:
            raise json.JSONDecodeError(f"invalid JSON: {err}", text, 0) from None
        if not isinstance(value, dict):  # every message of the protocols is an object
            raise json.JSONDecodeError("invalid JSON: a message is a JSON object", text, 0)
        return value
