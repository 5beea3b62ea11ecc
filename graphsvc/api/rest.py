"""REST routes: fact ingest for collectors, health for probes, host read-back and removal for operators."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from topo_facts import FabricFacts, HostFacts, HostMetrics

from graphsvc.api.errors import ERROR_RESPONSES
from graphsvc.api.one_pass_route import one_pass_route
from graphsvc.errors import ErrorKind, Rejected
from graphsvc.ingest.clock import future_skew_problem
from graphsvc.ingest.removal import HostHeld
from graphsvc.ingest.service import FabricIngestResult, HostIngestResult, IngestRejected, MetricsIngestResult
from graphsvc.read.hosts import rest_view
from graphsvc.security.auth import Principal, Role, authenticate, caller, require
from graphsvc.services import Services

HostPath = Annotated[str, Path(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]


def _services_of(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


async def services(request: Request) -> Services:
    """A coroutine, as `caller` is: a plain function dependency costs a worker-thread hop."""
    return _services_of(request)


def _host_writer_of(request: Request) -> Principal:
    """The caller, refused when it may not write the host the URL names. As a dependency it is
    decided before the body is validated: a collector sending another host a body that does not
    validate got 422 (what is wrong with the body) where 403 (not yours) is the answer."""
    principal = authenticate(request)
    host = str(request.path_params.get("name", ""))
    if not principal.may_write_host(host):
        if principal.role is Role.COLLECTOR:
            raise HTTPException(status_code=403, detail=f"forbidden: this collector token may not write host {host!r}")
        require(principal, Role.COLLECTOR, Role.OPERATOR)
    return principal


async def host_writer(request: Request) -> Principal:
    """`_host_writer_of` as a coroutine (a plain function dependency costs a worker-thread hop)."""
    return _host_writer_of(request)


# Every collector's facts each interval: the short way for a valid document (one_pass_route.py).
router = APIRouter(
    responses=ERROR_RESPONSES,
    route_class=one_pass_route({services: _services_of, caller: authenticate, host_writer: _host_writer_of}),
)


ServicesDep = Annotated[Services, Depends(services)]
Caller = Annotated[Principal, Depends(caller)]
HostWriter = Annotated[Principal, Depends(host_writer)]


def operator_first(route_class: type[APIRoute]) -> type[APIRoute]:
    """`route_class` whose handler refuses any caller but an operator before the body is read.

    A dependency is not early enough: FastAPI reads and decodes the body before it solves the
    dependencies, and `one_pass_route`'s short way parses and validates a valid body before it
    asks its providers; a scheduler or collector token got a 422 listing its body's mistakes
    (and pushed up to the body limit through full validation) where the answer is 403. The
    endpoint still calls `require` (a test's dependency overrides take FastAPI's way)."""

    class OperatorFirst(route_class):  # type: ignore[misc,valid-type]
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler: Callable[[Request], Coroutine[Any, Any, Response]] = super().get_route_handler()

            async def operator_handler(request: Request) -> Response:
                require(authenticate(request), Role.OPERATOR)
                return await handler(request)

            return operator_handler

    return OperatorFirst


def refuse_future(request: Request, collected_at: datetime) -> None:
    """A collected_at too far in the future would freeze the host (see graphsvc.ingest.clock)."""
    problem = future_skew_problem(collected_at, time.time(), request.app.state.settings.max_clock_skew_s)
    if problem is not None:
        raise IngestRejected(ErrorKind.INVALID, "collected_at", problem)


def same_host(host: str, body_hostname: str) -> None:
    """The URL and body must name the same host (HostWriter has checked the caller may write it)."""
    if body_hostname != host:
        raise IngestRejected(
            ErrorKind.INVALID, "hostname", f"body hostname {body_hostname!r} does not match the URL {host!r}"
        )


class ServiceHealth(BaseModel):
    """The probe's answer (named apart from `topo_facts.Health`, a device's health)."""

    status: str = Field(
        description="ok, or degraded when any host is stale (placement does not offer its GPUs); still HTTP 200"
    )
    store: str
    graph_version: int | None
    hosts: int
    gpus: int
    gpus_by_model: dict[str, int]
    stale_hosts: int
    stale_host_names: list[str] = Field(description="the first stale hosts by name (at most 20; stale_hosts: all)")
    all_hosts_stale: bool = Field(description="every host is stale: placement offers nothing")


@router.put("/v1/hosts/{name}/facts", tags=["ingest"])
async def put_host_facts(
    name: HostPath, facts: HostFacts, svc: ServicesDep, request: Request, caller: HostWriter
) -> HostIngestResult:
    """Replace everything the graph knows about one host; devices missing from the facts are removed."""
    same_host(name, facts.hostname)
    refuse_future(request, facts.collected_at)
    result = await svc.ingest_host(facts)
    request.app.state.metrics.ingest.labels("host_facts").inc()
    request.app.state.metrics.ingest_gpus.inc(len(facts.gpus))
    return result


@router.put("/v1/hosts/{name}/metrics", tags=["ingest"])
async def put_host_metrics(
    name: HostPath, metrics: HostMetrics, svc: ServicesDep, request: Request, caller: HostWriter
) -> MetricsIngestResult:
    """Update the fast-changing GPU metrics of a host already known from its full facts."""
    same_host(name, metrics.hostname)
    refuse_future(request, metrics.collected_at)
    result = await svc.ingest_metrics(metrics)
    request.app.state.metrics.ingest.labels("host_metrics").inc()
    return result


async def put_fabric(facts: FabricFacts, svc: ServicesDep, request: Request, caller: Caller) -> FabricIngestResult:
    """Replace one cluster's switch fabric (switches, NIC cables, switch cables); operators only,
    the role checked before the body is read (`operator_first`)."""
    require(caller, Role.OPERATOR)
    result = await svc.ingest_fabric(facts)
    request.app.state.metrics.ingest.labels("fabric").inc()
    return result


router.add_api_route(
    "/v1/fabric", put_fabric, methods=["PUT"], tags=["ingest"], route_class_override=operator_first(router.route_class)
)


@router.get("/v1/hosts/{name}", tags=["read"])
async def get_host(name: HostPath, svc: ServicesDep, caller: Caller) -> dict[str, Any]:
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    found = await svc.hosts.headers([name])
    if name not in found:
        raise HTTPException(status_code=404, detail=f"no host named {name!r}")
    return rest_view(found[name])


class HostRemovedBody(BaseModel):
    """What `DELETE /v1/hosts/{name}` removed (graphsvc.ingest.removal.HostRemoved)."""

    host: str
    gpus_removed: int
    mig_slices_removed: int
    nics_removed: int
    cables_removed: int = Field(description="its NICs' cables to fabric switches (the switches stay)")
    pcie_switches_removed: int
    numa_nodes_removed: int
    nvswitches_removed: int
    nvlink_domains_removed: int = Field(description="NVLink domains left with no GPU")
    nvlink_domains_recounted: int = Field(description="NVLink domains shared with other hosts, recounted")
    switches_recounted: int = Field(description="fabric switches it was cabled to, their free counters recounted")
    racks_removed: int = Field(description="its rack, when no other host was left in it")
    clusters_removed: int = Field(
        description="its cluster (1), when nothing was left in it: no rack, host, fabric switch or site naming it"
    )


@router.delete("/v1/hosts/{name}", tags=["ingest"])
async def delete_host(name: HostPath, svc: ServicesDep, caller: Caller) -> HostRemovedBody:
    """Decommission a host (operators): it and everything its facts brought, in one write; 409 naming
    the reservations, nothing changed, while live reservations hold any of its GPUs or MIG slices."""
    require(caller, Role.OPERATOR)
    out = await svc.remove_host(name, by=caller.name)
    if out is None:
        raise HTTPException(status_code=404, detail=f"no host named {name!r}")
    if isinstance(out, HostHeld):
        holds = [
            {"reservation": h.reservation, "holder": h.holder, "gpu": h.gpu, "mig_slice": h.mig_slice}
            for h in out.holds
        ]
        raise Rejected(ErrorKind.CONFLICT, "name", out.message, detail=holds[:100])
    return HostRemovedBody(**asdict(out))


@router.get("/healthz", response_model=ServiceHealth, tags=["health"])
async def healthz(svc: ServicesDep) -> ServiceHealth:
    counts = await svc.health()
    return ServiceHealth(
        # Degraded (any host stale) is still 200, not 503: the service itself answers.
        status="degraded" if counts.degraded else "ok",
        store=counts.store,
        graph_version=counts.graph_version,
        hosts=counts.hosts,
        gpus=counts.gpus,
        gpus_by_model=counts.gpus_by_model,
        stale_hosts=counts.stale_hosts,
        stale_host_names=list(counts.stale_host_names),
        all_hosts_stale=counts.all_stale,
    )
