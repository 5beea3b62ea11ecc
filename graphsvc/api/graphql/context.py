"""Per-request GraphQL context: the gateway and placement engine the app owns."""

from __future__ import annotations

from fastapi import Request
from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from graphsvc.placement.engine import PlacementEngine
from graphsvc.reservations.service import ReservationService
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway


class Context(BaseContext):
    def __init__(
        self,
        gateway: Gateway,
        engine: PlacementEngine,
        settings: Settings,
        reservations: ReservationService,
        metrics: object = None,
    ) -> None:
        super().__init__()
        self.gateway = gateway
        self.engine = engine
        self.settings = settings
        self.reservations = reservations
        self.metrics = metrics


Info = StrawberryInfo[Context, None]


async def get_context(request: Request) -> Context:
    gateway: Gateway = request.app.state.gateway
    reservations: ReservationService = request.app.state.reservations
    return Context(
        gateway=gateway,
        engine=reservations.engine,
        settings=request.app.state.settings,
        reservations=reservations,
        metrics=getattr(request.app.state, "metrics", None),
    )
