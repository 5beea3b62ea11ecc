"""REST routes for sites and prices: operators replace the site catalogue and load price files.

Bodies are validated whole (pydantic) before anything is written; the writes are one
statement each (graphsvc/sites/store.py).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from graphsvc.api.errors import ERROR_RESPONSES
from graphsvc.api.graphql.inputs import unprintable_value
from graphsvc.api.rest import Caller, ServicesDep, operator_first
from graphsvc.api.strict_routes import StrictJSONRoute
from graphsvc.errors import ErrorKind, Rejected
from graphsvc.security.auth import Role, require
from graphsvc.sites.catalog import PriceCatalog, SiteCatalog

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)
# The writes refuse other roles before their bodies are read (graphsvc.api.rest.operator_first).
OperatorRoute = operator_first(StrictJSONRoute)


class SitesWritten(BaseModel):
    sites: int


class PricesWritten(BaseModel):
    catalog: str
    written: list[str]
    kept_newer: list[str]


def _printable(catalog: BaseModel) -> None:
    """Every name, source and note is printable text (graphql.inputs.unprintable_value, the rule
    GraphQL's setCostFact follows): a 422 naming the field, before anything is written (a NUL
    went to the store, refused there by FalkorDB and written by Neo4j)."""
    hit = unprintable_value(catalog.model_dump(mode="json", by_alias=True))
    if hit is not None:
        raise Rejected(ErrorKind.INVALID, hit[0], f"{hit[0]}: {hit[1]}")


async def put_sites(catalog: SiteCatalog, svc: ServicesDep, caller: Caller) -> SitesWritten:
    """Replace every site, its clusters and capacity kinds, and the links between sites."""
    require(caller, Role.OPERATOR)
    _printable(catalog)
    return SitesWritten(sites=await svc.sites.replace_sites(catalog, time.time()))


router.add_api_route("/v1/sites", put_sites, methods=["PUT"], tags=["sites"], route_class_override=OperatorRoute)


@router.get("/v1/sites", tags=["sites"])
async def get_sites(svc: ServicesDep, caller: Caller) -> list[dict[str, Any]]:
    require(caller, Role.SCHEDULER, Role.OPERATOR)
    sites, counts = await svc.sites.overview()
    return [
        {
            "name": s.name,
            "kind": s.kind.value,
            "provider": s.provider,
            "region": s.region,
            "location": s.location,
            "capacity_kinds": [k.value for k in s.capacity_kinds],
            "clusters": list(s.clusters),
            "gpus": [{"model": m, "gpus": n, "free": f} for m, n, f in counts.get(s.name, [])],
        }
        for s in sites
    ]


async def put_prices(catalog: PriceCatalog, svc: ServicesDep, caller: Caller) -> PricesWritten:
    """Load a price file (JSON form of the TOML file): each fact is kept unless a later-dated one is stored."""
    require(caller, Role.OPERATOR)
    _printable(catalog)
    done = await svc.sites.load_prices(catalog, time.time())
    return PricesWritten(catalog=catalog.catalog, written=done.written, kept_newer=done.kept_newer)


router.add_api_route("/v1/prices", put_prices, methods=["PUT"], tags=["sites"], route_class_override=OperatorRoute)
