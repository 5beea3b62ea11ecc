"""A typed Python client for job launchers: place, reserve, renew, release, and a lease holder.

    from graphsvc.client import GraphsvcClient

    with GraphsvcClient("http://graphsvc:8000") as gs:
        with gs.hold("8xH100 nvlink=full-mesh", holder="job-42", ttl_s=60) as r:
            run_job(r.gpus)          # the lease is renewed in the background meanwhile
        # released here, also when run_job raised

If this process dies, nothing is released, but the lease runs out by itself: that is
what leases are for. Expected failures are exceptions a launcher can catch by type:
ConflictError, InfeasibleError, ValidationError, IdempotencyKeyMismatchError, LeaseLostError.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from graphsvc.placement.request import PlacementRequest, parse_request

log = logging.getLogger(__name__)


class GraphsvcError(Exception):
    """The service could not be reached or answered with an error."""


class ConflictError(GraphsvcError):
    def __init__(self, message: str, gpus: list[str], holders: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.gpus = gpus
        self.holders = holders


class InfeasibleError(GraphsvcError):
    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(f"{r['constraint']}: {r['message']}" for r in reasons) or "infeasible")
        self.reasons = reasons


class ValidationError(GraphsvcError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class IdempotencyKeyMismatchError(GraphsvcError):
    """The idempotency key was already used for another request (a client bug: use a new key)."""

    def __init__(self, message: str, reservation: str) -> None:
        super().__init__(message)
        self.reservation = reservation


class LeaseLostError(GraphsvcError):
    """The reservation expired or was ended before it could be renewed."""


@dataclass(frozen=True)
class Gpu:
    uuid: str
    index: int
    host: str


@dataclass
class Reservation:
    id: str
    holder: str
    expires_at: float
    gpus: list[Gpu] = field(default_factory=list)
    state: str = "active"


@dataclass(frozen=True)
class Candidate:
    score: float
    reason: str
    gpus: list[Gpu]
    bottleneck_gbps: float | None
    max_ib_hops: int
    ib_hops_known: bool = True


PLACE = """query($t: String!) { placementText(text: $t) {
  candidates { score reason bottleneckGbps maxIbHops ibHopsKnown gpus { uuid index host { name } } }
  infeasible { constraint message nearestFeasible } } }"""
RENEW = """mutation($id: String!, $ttl: Int) { renew(id: $id, ttlSeconds: $ttl) { __typename
  ... on Reservation { id holder expiresAt state gpus { uuid index host { name } } }
  ... on LeaseExpired { message } ... on NotFound { message } ... on ValidationError { field message } } }"""
RELEASE = """mutation($id: String!) { release(id: $id) { __typename ... on Reservation { id state } } }"""


RESERVE_MUTATION = """
mutation Reserve($input: ReserveInput!) {
  reserve(input: $input) {
    __typename
    ... on Reservation { id holder expiresAt gpus { uuid index host { name } }
                         migSlices { uuid profile gpuIndex host } }
    ... on Conflict { message gpus { uuid } holders { gpuUuid reservation holder } }
    ... on Infeasible { reasons { constraint message nearestFeasible } }
    ... on ValidationError { field message }
    ... on IdempotencyKeyMismatch { message reservation }
  }
}
"""


def request_input(text: str) -> dict[str, object]:
    """The GraphQL input for a text request (one parser: graphsvc.placement.request)."""
    r = parse_request(text)
    return {
        "gpus": r.gpus,
        "model": r.model,
        "minMemoryGiB": r.min_memory_gib,
        "nvlink": r.nvlink.name,
        "gpusPerHost": r.gpus_per_host,
        "maxIbHops": r.max_ib_hops,
        "sameNvlinkDomain": r.same_nvlink_domain,
        "railAligned": r.rail_aligned,
        "gpuNicAffinity": r.gpu_nic_affinity,
        "maxTemperatureC": r.max_temperature_c,
        "excludeUnhealthy": r.exclude_unhealthy,
        "excludeHosts": list(r.exclude_hosts),
        "limit": r.limit,
        "exclusive": r.exclusive,
        "preferences": {"hosts": list(r.prefer_hosts), "packing": r.packing.name, "coolerGpus": r.cooler_gpus},
        **({"capabilities": _capabilities(r)} if r.capabilities else {}),
        "sites": list(r.sites),
        "allowCrossSite": r.cross_site,
        **({"migProfile": r.mig_profile} if r.mig_profile is not None else {}),
    }


def _capabilities(r: PlacementRequest) -> dict[str, object]:
    caps = r.capabilities
    cc = caps.min_compute_capability
    return {
        "minComputeCapability": {"major": cc[0], "minor": cc[1]} if cc is not None else None,
        "minMemoryBandwidthGBps": caps.min_memory_bandwidth_gbps,
        "fp8": caps.fp8,
        "fp4": caps.fp4,
        "minLinkGeneration": caps.min_link_generation,
    }


def _gpus(rows: list[dict[str, Any]]) -> list[Gpu]:
    return [Gpu(uuid=g["uuid"], index=int(g["index"]), host=g["host"]["name"]) for g in rows]


class GraphsvcClient:
    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout_s, headers=headers)

    def __enter__(self) -> GraphsvcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = self._http.post("/graphql", json={"query": query, "variables": variables})
        except httpx.HTTPError as exc:
            raise GraphsvcError(f"graphsvc unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise GraphsvcError(f"graphsvc answered HTTP {resp.status_code}: {resp.text[:300]}")
        body = resp.json()
        if body.get("errors"):
            raise GraphsvcError(f"graphsvc error: {body['errors'][0].get('message')}")
        data: dict[str, Any] = body["data"]
        return data

    def place(self, request: str) -> list[Candidate]:
        """Ranked candidates for a text request; InfeasibleError when nothing fits."""
        out = self._graphql(PLACE, {"t": request})["placementText"]
        if not out["candidates"]:
            raise InfeasibleError(out["infeasible"])
        return [
            Candidate(c["score"], c["reason"], _gpus(c["gpus"]), c["bottleneckGbps"], c["maxIbHops"], c["ibHopsKnown"])
            for c in out["candidates"]
        ]

    def reserve(
        self,
        request: str | None = None,
        *,
        holder: str,
        gpus: list[str] | None = None,
        ttl_s: int = 600,
        idempotency_key: str | None = None,
        priority: int = 0,
        preemptible: bool = False,
        labels: list[str] | None = None,
        explain: bool = True,
    ) -> Reservation:
        """`explain`: an InfeasibleError carries the service's full diagnosis (costs it several searches)."""
        payload: dict[str, Any] = {
            "explain": explain,
            "holder": holder,
            "ttlSeconds": ttl_s,
            "idempotencyKey": idempotency_key,
            "priority": priority,
            "preemptible": preemptible,
            "labels": labels or [],
        }
        if request is not None:
            payload["request"] = request_input(request)
        if gpus is not None:
            payload["gpus"] = gpus
        out = self._graphql(RESERVE_MUTATION, {"input": payload})["reserve"]
        kind = out["__typename"]
        if kind == "Reservation":
            return Reservation(out["id"], out["holder"], out["expiresAt"], _gpus(out["gpus"]))
        if kind == "Conflict":
            raise ConflictError(out["message"], [g["uuid"] for g in out["gpus"]], out["holders"])
        if kind == "Infeasible":
            raise InfeasibleError(out["reasons"])
        if kind == "IdempotencyKeyMismatch":
            raise IdempotencyKeyMismatchError(out["message"], out["reservation"])
        raise ValidationError(out["field"], out["message"])

    def renew(self, reservation_id: str, ttl_s: int | None = None) -> Reservation:
        out = self._graphql(RENEW, {"id": reservation_id, "ttl": ttl_s})["renew"]
        kind = out["__typename"]
        if kind == "Reservation":
            return Reservation(out["id"], out["holder"], out["expiresAt"], _gpus(out["gpus"]), out["state"])
        if kind == "ValidationError":
            raise ValidationError(out["field"], out["message"])
        raise LeaseLostError(f"{reservation_id}: {out['message']}")

    def release(self, reservation_id: str) -> None:
        self._graphql(RELEASE, {"id": reservation_id})

    @contextmanager
    def hold(
        self,
        request: str | None = None,
        *,
        holder: str,
        gpus: list[str] | None = None,
        ttl_s: int = 60,
        renew_every_s: float | None = None,
        **reserve_args: Any,
    ) -> Iterator[Reservation]:
        """Reserve, keep the lease alive in a background thread while the block runs, release after."""
        reservation = self.reserve(request, holder=holder, gpus=gpus, ttl_s=ttl_s, **reserve_args)
        stop = threading.Event()
        lost: list[BaseException] = []
        interval = renew_every_s if renew_every_s is not None else max(0.2, ttl_s / 3)

        def keep_alive() -> None:
            while not stop.wait(interval):
                try:
                    self.renew(reservation.id, ttl_s)
                except LeaseLostError as exc:
                    lost.append(exc)
                    log.error("lease on %s lost: %s", reservation.id, exc)
                    return
                except GraphsvcError as exc:  # a blip: try again next interval, the lease has slack
                    log.warning("renewing %s failed, will retry: %s", reservation.id, exc)

        thread = threading.Thread(target=keep_alive, name=f"lease-{reservation.id}", daemon=True)
        thread.start()
        try:
            yield reservation
        finally:
            stop.set()
            thread.join(timeout=interval + 5)
            try:
                self.release(reservation.id)
            except GraphsvcError as exc:  # the lease will run out by itself
                log.warning("releasing %s failed (its lease will expire): %s", reservation.id, exc)
        if lost:
            raise LeaseLostError(str(lost[0]))


# ---- jobs that change: resize, checkpoints, preemption notices -----------------------------

ELASTIC_STATE = """query($id: String!) { elasticState(id: $id) { state rankOrder preemptBy preemptAt } }"""
RENEW_PROGRESS = """mutation($id: String!, $ttl: Int, $at: Float, $every: Float) {
  renew(id: $id, ttlSeconds: $ttl, lastCheckpointAt: $at, checkpointEverySeconds: $every) { __typename
  ... on LeaseExpired { message } ... on NotFound { message } ... on ValidationError { field message } } }"""
RESIZE = """mutation($id: String!, $gpus: Int, $remove: [String!], $ranks: [Int!], $keep: Boolean!) {
  resize(id: $id, gpus: $gpus, remove: $remove, removeRanks: $ranks, keepLayout: $keep) { __typename
  ... on Resized { added removed layoutKept reason rankOrder }
  ... on Conflict { message gpus { uuid } holders { gpuUuid reservation holder } }
  ... on Infeasible { reasons { constraint message nearestFeasible } }
  ... on ValidationError { field message } ... on NotFound { message } ... on LeaseExpired { message } } }"""


@dataclass(frozen=True)
class PreemptionNotice:
    """Another job will take these GPUs at `deadline`: checkpoint, then release (or be ended)."""

    reservation: str
    by: str
    deadline: float


@dataclass(frozen=True)
class ResizeNotice:
    """The reservation's GPUs changed (a resize, or a failed GPU replaced): the new rank order."""

    reservation: str
    rank_order: list[str]


@dataclass(frozen=True)
class ResizeResult:
    added: list[str]
    removed: list[str]
    layout_kept: bool
    reason: str
    rank_order: list[str]


class ElasticLease:
    """A held reservation that can change: renewals carry the job's last checkpoint, and every
    renewal also looks for notices (a preemption with its deadline, a new rank order) and hands
    them to the job's callbacks, on the lease thread."""

    def __init__(
        self,
        client: GraphsvcClient,
        reservation: Reservation,
        *,
        on_preempt: Callable[[PreemptionNotice], None] | None = None,
        on_resize: Callable[[ResizeNotice], None] | None = None,
    ) -> None:
        self.client = client
        self.reservation = reservation
        self.on_preempt = on_preempt
        self.on_resize = on_resize
        self.last_checkpoint_at: float | None = None
        self.checkpoint_every_s: float | None = None
        self.rank_order: list[str] = [g.uuid for g in reservation.gpus]
        self.notice: PreemptionNotice | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.reservation.id

    def checkpointed(self, at: float | None = None, *, every_s: float | None = None) -> None:
        """The job saved a checkpoint (now, or at `at`); sent with the next renewal."""
        with self._lock:
            self.last_checkpoint_at = time.time() if at is None else at
            if every_s is not None:
                self.checkpoint_every_s = every_s

    def renew(self, ttl_s: int | None) -> None:
        with self._lock:
            at, every = self.last_checkpoint_at, self.checkpoint_every_s
        out = self.client._graphql(RENEW_PROGRESS, {"id": self.id, "ttl": ttl_s, "at": at, "every": every})["renew"]
        kind = out["__typename"]
        if kind == "ValidationError":
            raise ValidationError(out["field"], out["message"])
        if kind != "Reservation":
            raise LeaseLostError(f"{self.id}: {out['message']}")
        self.poll()

    def poll(self) -> None:
        """Look for notices now (renewals do this too)."""
        state = self.client._graphql(ELASTIC_STATE, {"id": self.id})["elasticState"]
        if state is None:
            return
        if state["preemptBy"] and self.notice is None:
            self.notice = PreemptionNotice(self.id, state["preemptBy"], float(state["preemptAt"]))
            if self.on_preempt is not None:
                self.on_preempt(self.notice)
        order = list(state["rankOrder"])
        if order and order != self.rank_order:
            self.rank_order = order
            if self.on_resize is not None:
                self.on_resize(ResizeNotice(self.id, order))

    def resize(
        self,
        gpus: int | None = None,
        *,
        remove: list[str] | None = None,
        remove_ranks: list[int] | None = None,
        keep_layout: bool = True,
    ) -> ResizeResult:
        variables = {"id": self.id, "gpus": gpus, "remove": remove, "ranks": remove_ranks, "keep": keep_layout}
        out = self.client._graphql(RESIZE, variables)["resize"]
        kind = out["__typename"]
        if kind == "Resized":
            self.rank_order = list(out["rankOrder"])
            return ResizeResult(out["added"], out["removed"], out["layoutKept"], out["reason"], self.rank_order)
        if kind == "Conflict":
            raise ConflictError(out["message"], [g["uuid"] for g in out["gpus"]], out["holders"])
        if kind == "Infeasible":
            raise InfeasibleError(out["reasons"])
        if kind == "ValidationError":
            raise ValidationError(out["field"], out["message"])
        raise LeaseLostError(f"{self.id}: {out['message']}")


def elastic_hold(
    client: GraphsvcClient,
    request: str | None = None,
    *,
    holder: str,
    ttl_s: int = 60,
    renew_every_s: float | None = None,
    on_preempt: Callable[[PreemptionNotice], None] | None = None,
    on_resize: Callable[[ResizeNotice], None] | None = None,
    **reserve_args: Any,
) -> AbstractContextManager[ElasticLease]:
    """Like `GraphsvcClient.hold`, for a job that resizes, checkpoints and may be preempted."""

    @contextmanager
    def run() -> Iterator[ElasticLease]:
        lease = ElasticLease(
            client, client.reserve(request, holder=holder, ttl_s=ttl_s, **reserve_args),
            on_preempt=on_preempt, on_resize=on_resize,
        )  # fmt: skip
        stop = threading.Event()
        lost: list[BaseException] = []
        interval = renew_every_s if renew_every_s is not None else max(0.2, ttl_s / 3)

        def keep_alive() -> None:
            while not stop.wait(interval):
                try:
                    lease.renew(ttl_s)
                except LeaseLostError as exc:
                    lost.append(exc)
                    return
                except GraphsvcError as exc:
                    log.warning("renewing %s failed, will retry: %s", lease.id, exc)

        thread = threading.Thread(target=keep_alive, name=f"lease-{lease.id}", daemon=True)
        thread.start()
        try:
            yield lease
        finally:
            stop.set()
            thread.join(timeout=interval + 5)
            try:
                client.release(lease.id)
            except GraphsvcError as exc:
                log.warning("releasing %s failed (its lease will expire): %s", lease.id, exc)
        if lost and lease.notice is None:
            raise LeaseLostError(str(lost[0]))

    return run()
