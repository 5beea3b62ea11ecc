"""How the replay talks to the service: in process (the engine and reservation service the API
wraps, no transport) or over GraphQL (a running service, `--server`).

Both ask the same engine for ranked candidates and reserve GPUs by uuid through the same
reservation service; neither pays for the infeasibility diagnosis (a scheduler falling back to
a softer request does not need the words: in process the engine is asked not to explain, over
GraphQL the query does not select `infeasible`). The in-process path also skips HTTP and
GraphQL, which keeps a many-seed replay affordable on a small machine.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx

from graphsvc.client import RESERVE_MUTATION
from graphsvc.placement.request import parse_request
from graphsvc.reservations.service import Reservation, ReservationService
from graphsvc.store.gateway import Gateway

HOLDER = "replay"
# Candidates only: without `infeasible` selected, the service runs no diagnosis.
PLACE_CANDIDATES = """query($t: String!) { placementText(text: $t) { candidates { gpus { uuid } } } }"""
TTL_S = 7 * 86400


class Driver(Protocol):
    async def candidates(self, text: str) -> list[list[str]]:
        """GPU uuids of each ranked candidate for a text request (empty if infeasible)."""
        ...

    async def reserve(self, gpus: list[str]) -> str | None:
        """A reservation id, or None if any of the GPUs is taken."""
        ...

    async def release(self, reservation: str) -> None: ...


class InProcess:
    def __init__(self, gateway: Gateway) -> None:
        self.reservations = ReservationService(gateway, max_ttl_s=TTL_S)

    async def candidates(self, text: str) -> list[list[str]]:
        result = await self.reservations.engine.place(parse_request(text), explain_infeasible=False)
        return [[g.uuid for g in c.gpus] for c in result.candidates]

    async def reserve(self, gpus: list[str]) -> str | None:
        out = await self.reservations.reserve(holder=HOLDER, gpus=gpus, ttl_s=TTL_S)
        return out.id if isinstance(out, Reservation) else None

    async def release(self, reservation: str) -> None:
        await self.reservations.release(reservation)


class OverGraphQL:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def _gql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        body = (await self.client.post("/graphql", json={"query": query, "variables": variables})).json()
        if body.get("errors"):
            raise RuntimeError(body["errors"][0]["message"])
        data: dict[str, Any] = body["data"]
        return data

    async def candidates(self, text: str) -> list[list[str]]:
        data = await self._gql(PLACE_CANDIDATES, {"t": text})
        return [[g["uuid"] for g in c["gpus"]] for c in data["placementText"]["candidates"]]

    async def reserve(self, gpus: list[str]) -> str | None:
        payload = {"holder": HOLDER, "ttlSeconds": TTL_S, "gpus": gpus}
        out = (await self._gql(RESERVE_MUTATION, {"input": payload}))["reserve"]
        return str(out["id"]) if out["__typename"] == "Reservation" else None

    async def release(self, reservation: str) -> None:
        await self._gql("mutation($id: String!) { release(id: $id) { __typename } }", {"id": reservation})
