"""Error responses: bad input names its field (4xx); the unexpected is masked and logged (5xx)."""

from __future__ import annotations

import logging
import math
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphsvc.api.strict_json import safe_text
from graphsvc.errors import TIMED_OUT, UNAVAILABLE, DomainError, ErrorKind, Rejected, report_outage

log = logging.getLogger("graphsvc.api")


class FieldProblem(BaseModel):
    field: str
    message: str
    input: Any = None


class ErrorBody(BaseModel):
    """Every 4xx graphsvc writes itself (bad input, conflicts, limits) has this shape."""

    error: str
    message: str | None = None
    fields: list[FieldProblem] = []
    detail: Any = None


# The one mapping from the domain's error kinds (graphsvc.errors) to HTTP.
STATUS: dict[ErrorKind, int] = {
    ErrorKind.INVALID: 422,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.CONFLICT: 409,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.TIMEOUT: 503,
}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {
        "model": ErrorBody,
        "description": "Not JSON, or not JSON as RFC 8259 defines it (NaN, a lone surrogate, deep nesting)",
    },
    401: {"model": ErrorBody, "description": "No or unknown bearer token"},
    403: {"model": ErrorBody, "description": "The token's role may not do this"},
    404: {"model": ErrorBody, "description": "Not found"},
    409: {"model": ErrorBody, "description": "Conflicts with the graph"},
    413: {"model": ErrorBody, "description": "Request body too large"},
    422: {"model": ErrorBody, "description": "Invalid input; `fields` names each bad field"},
    503: {"model": ErrorBody, "description": "The graph store is unavailable or timed out; retry"},
}


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [p for p in loc if p not in ("body", "path", "query")]
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def _input(value: Any) -> Any:
    """Echo small inputs only: a 10 MB string has no place in an error response.

    What JSON cannot carry (NaN, a lone surrogate) is echoed as text, never as a 500.
    """
    if isinstance(value, str):
        return safe_text(value if len(value) <= 200 else value[:200] + "...")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    return None


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields: list[dict[str, Any]] = []
        for err in exc.errors()[:50]:
            msg = safe_text(str(err.get("msg", "invalid")))
            where = _field(err.get("loc", ()))
            if err.get("type") == "value_error" and ": " in msg:
                # Cross-reference checks report "path: problem; path: problem".
                for part in msg.removeprefix("Value error, ").split("; "):
                    path, _sep, problem = part.partition(": ")
                    prefix = "" if where == "body" else where + "."
                    fields.append({"field": prefix + path, "message": problem or part, "input": None})
                continue
            fields.append({"field": where, "message": msg, "input": _input(err.get("input"))})
        if any(err.get("type") == "json_invalid" for err in exc.errors()):
            # A body that is not JSON at all is a 400, as strict JSON's refusals are (the answer
            # table says so): 422 is for JSON whose fields are wrong.
            return JSONResponse(status_code=400, content={"error": "invalid JSON", "fields": fields})
        return JSONResponse(status_code=422, content={"error": "invalid request", "fields": fields})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        """FastAPI's HTTPException answers in the same shape as every other 4xx."""
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": str(exc.detail), "detail": exc.detail, "fields": []},
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(DomainError)
    async def domain_error(_: Request, exc: DomainError) -> JSONResponse:
        """Every expected failure of the domain, by its kind; the same kinds GraphQL answers with."""
        if exc.kind is ErrorKind.UNAVAILABLE:
            report_outage(exc)
            return JSONResponse(status_code=503, content={"error": UNAVAILABLE, "fields": []})
        if exc.kind is ErrorKind.TIMEOUT:
            log.warning("query=%s timed out", getattr(exc, "query", "?"))
            return JSONResponse(status_code=503, content={"error": TIMED_OUT, "fields": []})
        fields = [{"field": exc.field, "message": exc.message}] if isinstance(exc, Rejected) else []
        detail = exc.detail if isinstance(exc, Rejected) else exc.message
        return JSONResponse(
            status_code=STATUS[exc.kind], content={"error": exc.message, "fields": fields, "detail": detail}
        )

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:12]
        log.exception("unexpected error id=%s", error_id, exc_info=exc)
        return JSONResponse(status_code=500, content={"error": "internal error", "error_id": error_id})
