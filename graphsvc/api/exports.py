"""HTTP endpoints for the exports: GET /v1/export/{format} (the CLI `graphsvc export` calls these)."""

from __future__ import annotations

from enum import Enum

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse

from graphsvc.api.errors import ERROR_RESPONSES
from graphsvc.exports import formats
from graphsvc.exports.model import cluster_view
from graphsvc.exports.nccl import nccl_xml
from graphsvc.security.auth import Principal, Role, authenticate, require
from graphsvc.store.gateway import Gateway


class ExportFormat(str, Enum):  # noqa: UP042 - FastAPI path enums
    SLURM_TREE = "slurm-tree"
    SLURM_BLOCK = "slurm-block"
    SLURM_GRES = "slurm-gres"
    KUEUE = "kueue"
    KUEUE_LABELS = "kueue-labels"
    VOLCANO = "volcano"
    NCCL = "nccl"


router = APIRouter(responses=ERROR_RESPONSES)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@router.get("/v1/export/{fmt}", response_class=PlainTextResponse, tags=["export"])
async def export(
    fmt: ExportFormat,
    request: Request,
    cluster: str = Query("default", max_length=253, pattern=NAME),
    host: str | None = Query(None, max_length=253, pattern=NAME),
    caller: Principal = Depends(authenticate),  # noqa: B008 - FastAPI's dependency idiom
) -> PlainTextResponse:
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    gw: Gateway = request.app.state.gateway
    return PlainTextResponse(await render(gw, fmt, cluster, host))


async def render(gw: Gateway, fmt: ExportFormat, cluster: str, host: str | None) -> str:
    if fmt is ExportFormat.NCCL:
        if host is None:
            raise HTTPException(status_code=422, detail="the nccl export is per host: add ?host=NAME")
        text = await nccl_xml(gw, host)
        if text is None:
            raise HTTPException(status_code=404, detail=f"no host named {host!r}")
        return text
    view = await cluster_view(gw, cluster)
    if not view.hosts:
        raise HTTPException(status_code=404, detail=f"cluster {cluster!r} has no hosts")
    if fmt is ExportFormat.SLURM_TREE:
        return formats.slurm_tree(view)
    if fmt is ExportFormat.SLURM_BLOCK:
        return formats.slurm_block(view)
    if fmt is ExportFormat.SLURM_GRES:
        return await formats.slurm_gres(gw, view)
    if fmt is ExportFormat.KUEUE:
        return formats.as_list([formats.kueue_topology(view)])
    if fmt is ExportFormat.KUEUE_LABELS:
        return formats.kueue_label_commands(view)
    return formats.as_list(formats.volcano_hypernodes(view))
