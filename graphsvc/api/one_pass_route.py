"""Routes that answer the common request without FastAPI's per-request machinery.

A collector's `PUT /v1/hosts/{name}/facts` and a scheduler's reserve and release are each called
per host per interval, per job. At 16 collectors an ingest request cost the service ~1.2 ms of
CPU, ~0.3 ms of it FastAPI's request handling (solving the dependencies, validating the body,
validating and serializing the answer); and once the body was parsed and validated in one pass
(`strict_json.parse_model`), FastAPI's validation of the model instance ran its after-validators
again (#15: ingest documents/s, reservations/s).

A route of `one_pass_route(providers)` stays a FastAPI route: its OpenAPI entry, its 401, 403,
413 and 422 answers. Where its endpoint takes only what the short way knows how to give (path
parameters, one body model, the `Request`, and dependencies named in `providers`: functions of the
request that FastAPI would await to the same value), its handler answers a request whose path
parameters validate and whose body (`application/json`) `parse_model` takes as FastAPI would:
the dependencies from their providers, the endpoint called with the same arguments, the answer
validated and written as FastAPI writes it (the response field's JSON, by alias). The route is
read as included (an inclusion's own dependencies count), an app with dependency overrides or a
`def` endpoint go FastAPI's way, and a body that cannot be read (a client gone, a body over the
limit) is answered as FastAPI's handler answers it, without reading on. Any other request goes
FastAPI's way, reading the same cached body; an exception raised on the short way reaches the
same exception handlers (they are outside the route's handler).
`tests/integration/test_one_pass_route.py` sends every request both ways.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi._body_limit import get_body_limit_error
from fastapi.datastructures import DefaultPlaceholder
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute, _effective_route_context_var
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY

from graphsvc.api import strict_json
from graphsvc.api.strict_routes import (
    Handler,
    StrictJSONRequest,
    StrictJSONRoute,
    one_body_model,
    refusing_repeated_keys,
)

Provider = Callable[[Request], Any]


class OnePassRoute(StrictJSONRoute):
    """See the module's docstring; `providers` maps a dependency function to what gives its value."""

    providers: Mapping[Callable[..., Any], Provider] = {}

    def get_route_handler(self) -> Handler:
        short = self._short_way()
        return short if short is not None else super().get_route_handler()

    def _short_way(self) -> Handler | None:
        """The handler with the short way, or None where the endpoint takes what it cannot give.

        Read from the route as included (FastAPI 0.165 builds an included route's handler inside
        its inclusion's context: the dependencies, prefix and overrides provider that inclusion
        adds), as FastAPI's own `get_route_handler` does."""
        context = _effective_route_context_var.get()
        route: Any = context if context is not None and context.original_route is self else self
        d = route.dependant
        model = one_body_model(route)
        answer = route.response_field
        endpoint = self.endpoint
        if (
            not inspect.iscoroutinefunction(endpoint)
            or d.query_params
            or d.header_params
            or d.cookie_params
            or (d.body_params and model is None)
            or d.websocket_param_name
            or d.http_connection_param_name
            or d.response_param_name
            or d.background_tasks_param_name
            or d.security_scopes_param_name
            or any(s.call not in self.providers or s.dependencies or s.name is None for s in d.dependencies)
            or answer is None
            or not isinstance(route.response_class, DefaultPlaceholder)
            or route.response_model_include is not None
            or route.response_model_exclude is not None
            or not route.response_model_by_alias
            or route.response_model_exclude_unset
            or route.response_model_exclude_defaults
            or route.response_model_exclude_none
        ):
            return None
        fastapi_way = APIRoute.get_route_handler(self)
        overrides_provider = route.dependency_overrides_provider
        path_params = [(f.name, f.alias, f) for f in d.path_params]
        given = [(str(s.name), self.providers[s.call]) for s in d.dependencies if s.call is not None]
        body_name = d.body_params[0].name if d.body_params else None
        request_name = d.request_param_name
        status = route.status_code or 200

        async def one_pass_handler(plain: Request) -> Response:
            # FastAPI's way gets this request too: it reads the body this handler read from the
            # request's cache (a new request would wait for it forever) and parses it strictly.
            request = StrictJSONRequest(plain.scope, plain.receive)
            if getattr(overrides_provider, "dependency_overrides", None):
                return await fastapi_way(request)  # a test's overrides: only FastAPI applies them
            args: dict[str, Any] = {}
            for name, alias, field in path_params:
                value, errors = field.validate(request.path_params.get(alias), {}, loc=("path", alias))
                if errors:
                    return await fastapi_way(request)
                args[name] = value
            if body_name is not None and model is not None:
                if request.headers.get("content-type") != "application/json":
                    return await fastapi_way(request)
                try:
                    data = await request.body()
                except Exception as err:
                    # As FastAPI's handler answers a failed read (a client gone, a body over the
                    # limit): read again, it would pull more of a body that is being refused.
                    if MAX_BODY_SIZE_SCOPE_KEY in request.scope and (limit := get_body_limit_error(err)):
                        raise limit from err
                    raise HTTPException(status_code=400, detail="There was an error parsing the body") from err
                body = strict_json.parse_model(model, data)
                if body is None:
                    return await fastapi_way(request)
                args[body_name] = body
            for name, provide in given:
                args[name] = provide(request)
            if request_name is not None:
                args[request_name] = request
            result = await endpoint(**args)
            if isinstance(result, Response):
                return result
            value, errors = answer.validate(result, {}, loc=("response",))
            if errors:
                raise ResponseValidationError(errors=errors, body=result)
            return Response(
                answer.serialize_json(value, by_alias=True), status_code=status, media_type="application/json"
            )

        return refusing_repeated_keys(one_pass_handler)


def one_pass_route(providers: Mapping[Callable[..., Any], Provider]) -> type[OnePassRoute]:
    """A route class whose short way gives each dependency in `providers` from its provider."""
    return type("OnePassRoute", (OnePassRoute,), {"providers": dict(providers)})
