"""HTTP endpoints for the exports: GET /v1/export/{format} (the CLI `graphsvc export` calls these).

Each response carries the graph version and the newest fact time it used, in the body (a
comment or annotations) and in the ``X-Graphsvc-Graph-Version`` / ``X-Graphsvc-Facts-As-Of``
headers; each pull is remembered for the ``graphsvc_export_last_pull_age_seconds`` gauge.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse

from graphsvc.api.errors import ERROR_RESPONSES
from graphsvc.exports.render import ExportFormat
from graphsvc.security.auth import Principal, Role, require
from graphsvc.security.auth import caller as auth_caller
from graphsvc.services import Services

__all__ = ["ExportFormat", "router"]

router = APIRouter(responses=ERROR_RESPONSES)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@router.get("/v1/export/{fmt}", response_class=PlainTextResponse, tags=["export"])
async def export(
    fmt: ExportFormat,
    request: Request,
    cluster: str | None = Query(None, max_length=253, pattern=NAME, description="default 'default'"),
    host: str | None = Query(None, max_length=253, pattern=NAME),
    caller: Principal = Depends(auth_caller),  # noqa: B008 - FastAPI's dependency idiom
) -> PlainTextResponse:
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    services: Services = request.app.state.services
    out = await services.export(fmt, cluster, host)  # ExportError: a DomainError (graphsvc.api.errors)
    request.app.state.metrics.export_pulled(fmt.value)
    headers = {
        "X-Graphsvc-Graph-Version": str(out.stamp.graph_version),
        "X-Graphsvc-Facts-As-Of": out.stamp.facts_as_of_iso,
    }
    return PlainTextResponse(out.text, headers=headers)
