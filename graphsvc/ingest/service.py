"""Applies validated facts to the graph through the gateway.

Validation (pydantic, in topo_facts) happens before anything is written; the
write itself is one statement, so a host's facts land whole or not at all.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from topo_facts import FabricFacts, HostFacts, HostMetrics

from graphsvc.errors import ErrorKind, Rejected
from graphsvc.ingest.fabric_plan import host_positions
from graphsvc.ingest.host_plan import host_params, nic_uuid
from graphsvc.store.gateway import Gateway

log = logging.getLogger(__name__)


class IngestRejected(Rejected):
    """Facts that are valid on their own but conflict with the graph, or name what it lacks."""


async def recount(gateway: Gateway, hosts: list[str]) -> None:
    """Bring the free-GPU counters of these hosts, their NVLink domains and leaves up to date.

    Each step recomputes from the GPUs themselves, so running it again (after a crash
    between steps, say) only repeats the same answer.
    """
    rows = await gateway.write("recount_hosts", {"hosts": hosts})
    domains = sorted({d for r in rows for d in r["domains"]})
    leaves = sorted({leaf for r in rows for leaf in r["leaves"]})
    if domains:
        await gateway.write("recount_domains", {"uuids": domains})
    if leaves:
        await gateway.write("recount_leaves", {"names": leaves})


@dataclass(frozen=True)
class HostIngestResult:
    host: str
    applied: bool
    gpus: int
    nics: int
    received_at: float
    reason: str | None = None


async def ingest_host(gateway: Gateway, facts: HostFacts) -> HostIngestResult:
    received_at = time.time()
    params = host_params(facts, received_at=received_at)
    before = await gateway.read("host_domains", {"host": facts.hostname})
    rows = await gateway.write("ingest_host", params)
    if not rows:
        return await _explain_host_refusal(gateway, facts, received_at)
    old_domains = set(before[0]["uuids"]) if before else set()
    new_domains = {d["uuid"] for d in params["domains"]}
    left = sorted(old_domains - new_domains)
    if left:
        # The statement recounted the host and the domains it is in now; domains it left
        # (rare: recabling) lose members: drop the empty ones, recount the rest.
        await gateway.write("prune_nvlink_domains", {"uuids": left})
        await gateway.write("recount_domains", {"uuids": left})
    log.debug("ingest host=%s gpus=%d nics=%d", facts.hostname, len(facts.gpus), len(facts.nics))
    return HostIngestResult(facts.hostname, True, len(facts.gpus), len(facts.nics), received_at)


async def _explain_host_refusal(gateway: Gateway, facts: HostFacts, received_at: float) -> HostIngestResult:
    rows = await gateway.read(
        "ingest_host_blockers",
        {"host": facts.hostname, "gpu_uuids": [g.uuid for g in facts.gpus]},
    )
    row = rows[0] if rows else {}
    taken = [t for t in row.get("taken", []) if t.get("uuid") is not None]
    if taken:
        raise IngestRejected(
            ErrorKind.CONFLICT,
            "gpus.uuid",
            f"{len(taken)} GPU uuid(s) already belong to another host",
            detail=taken[:20],
        )
    stored = row.get("stored_collected_at")
    if stored is not None and stored > facts.collected_at.timestamp():
        # Replayed or reordered facts: the graph already holds newer ones. Not an error.
        return HostIngestResult(
            facts.hostname,
            False,
            len(facts.gpus),
            len(facts.nics),
            received_at,
            reason="stored facts are newer (collected_at)",
        )
    raise IngestRejected(ErrorKind.CONFLICT, "host", "the host changed concurrently; retry")


@dataclass(frozen=True)
class FabricIngestResult:
    cluster: str
    switches: int
    links: int


async def ingest_fabric(gateway: Gateway, facts: FabricFacts) -> FabricIngestResult:
    nic_keys = [nic_uuid(u.host, u.nic) for u in facts.nic_uplinks]
    params: dict[str, Any] = {
        "cluster": facts.cluster,
        "nic_uuids": nic_keys,
        "switch_names": [s.name for s in facts.switches],
        "switches": [
            {
                "name": s.name,
                "props": {
                    k: v
                    for k, v in {
                        "name": s.name,
                        "tier": s.tier.value,
                        "cluster": facts.cluster,
                        "scalable_unit": s.scalable_unit,
                        "rail": s.rail,
                        "model": s.model,
                    }.items()
                    if v is not None
                },
            }
            for s in facts.switches
        ],
        "nic_uplinks": [
            {
                "nic": key,
                "switch": u.switch,
                "props": {"links": u.links, "bandwidth_gbps": u.bandwidth_gbps},
            }
            for key, u in zip(nic_keys, facts.nic_uplinks, strict=True)
        ],
        "switch_uplinks": [
            {
                "lower": u.lower,
                "upper": u.upper,
                "props": {"links": u.links, "bandwidth_gbps": u.bandwidth_gbps},
            }
            for u in facts.switch_uplinks
        ],
    }
    params["host_fabric"] = host_positions(facts)
    rows = await gateway.write("ingest_fabric", params)
    if not rows:
        missing = (await gateway.read("missing_nics", {"nic_uuids": nic_keys}))[0]["missing"]
        raise IngestRejected(
            ErrorKind.INVALID,
            "nic_uplinks",
            f"{len(missing)} cabled NIC(s) are not in the graph; ingest their hosts first",
            detail=missing[:20],
        )
    row = rows[0]
    log.info("ingest fabric cluster=%s switches=%d links=%d", facts.cluster, row["switches"], row["links"])
    return FabricIngestResult(facts.cluster, int(row["switches"]), int(row["links"]))


@dataclass(frozen=True)
class MetricsIngestResult:
    host: str
    applied: bool
    gpus: int
    reason: str | None = None


async def ingest_metrics(gateway: Gateway, metrics: HostMetrics) -> MetricsIngestResult:
    by_uuid = {
        m.uuid: {k: v for k, v in m.model_dump(mode="json", exclude={"uuid"}).items() if v is not None}
        for m in metrics.gpus
    }
    rows = await gateway.write(
        "update_gpu_metrics",
        {
            "host": metrics.hostname,
            "collected_at": metrics.collected_at.timestamp(),
            "received_at": time.time(),
            "metrics": by_uuid,
        },
    )
    if rows:
        return MetricsIngestResult(metrics.hostname, True, len(rows[0]["updated"]))
    fresh = await gateway.read("host_freshness", {"host": metrics.hostname})
    if not fresh:
        raise IngestRejected(
            ErrorKind.NOT_FOUND, "hostname", f"no host named {metrics.hostname!r}; send its full facts first"
        )
    return MetricsIngestResult(metrics.hostname, False, 0, reason="newer facts or metrics are stored")
