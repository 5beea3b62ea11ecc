"""Applies validated facts to the graph through the gateway.

Validation (pydantic, in topo_facts) happens before anything is written; the
write itself is one statement, so a host's facts land whole or not at all.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from topo_facts import FabricFacts, HostFacts, HostMetrics, SwitchTier
from topo_facts.models import Health

from graphsvc.errors import ErrorKind, Rejected
from graphsvc.ingest.fabric_plan import home_leaves, host_positions
from graphsvc.ingest.host_plan import FINGERPRINT, facts_digest, host_params, nic_uuid, unchanged_params
from graphsvc.store.gateway import Gateway
from graphsvc.store.group_commit import GroupCommit

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


@dataclass(frozen=True)
class Written:
    """What this process last wrote for a host: its facts' fingerprint, the digest of the facts
    it was planned from (`facts_digest`: a document with the same digest needs no plan) and
    which GPUs failed."""

    fingerprint: str
    failed: frozenset[str]
    digest: str


class Fingerprints:
    """The fingerprint of the facts this process last wrote in full, per host (bounded, LRU).

    A hint, never the truth: the store holds the fingerprint too and `ingest_host_unchanged`
    checks it there, so another replica's write (or a lost cache) costs at most one statement
    that writes nothing."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self._known: OrderedDict[str, Written] = OrderedDict()

    def get(self, host: str) -> Written | None:
        value = self._known.get(host)
        if value is not None:
            self._known.move_to_end(host)
        return value

    def put(self, host: str, value: Written) -> None:
        self._known[host] = value
        self._known.move_to_end(host)
        while len(self._known) > self.size:
            self._known.popitem(last=False)

    def forget(self, host: str) -> None:
        self._known.pop(host, None)


UnchangedBatcher = GroupCommit[dict[str, Any], bool]


def unchanged_batcher(gateway: Gateway) -> UnchangedBatcher:
    """Group commit for unchanged documents (`graphsvc.store.group_commit`): documents arriving
    while an `ingest_hosts_unchanged` statement is in flight go together in the next, each host
    once per statement, each caller getting its own answer; two statements in flight where the
    store runs writes one at a time (the service parses the next documents while the store
    writes: 16 collectors, one in flight, left the service idle ~30% of the time). No timer: a
    lone document goes at once."""

    async def write(docs: list[dict[str, Any]]) -> list[bool]:
        rows = await gateway.write("ingest_hosts_unchanged", {"docs": docs})
        applied = {r["host"] for r in rows}
        return [doc["host"] in applied for doc in docs]

    in_flight = 2 if gateway.serial_writes else 1
    return GroupCommit(write, max_batch=64, max_in_flight=in_flight, distinct=lambda doc: doc["host"])


async def ingest_host(
    gateway: Gateway,
    facts: HostFacts,
    fingerprints: Fingerprints | None = None,
    batcher: UnchangedBatcher | None = None,
) -> HostIngestResult:
    """One statement per document (#15). A document whose topology is the one this process last
    wrote for the host (same fingerprint: only timestamps, health and load differ) is applied by
    `ingest_host_unchanged` (the host's properties, the GPUs' health and load, counters moved by
    health flips); any other by `ingest_host` (the facts, the counters of the host, the NVLink
    domains it joins and leaves, and its leaves, atomically). Nothing is lost either way: what the
    fingerprint leaves out is exactly what the small statement writes. A refusal costs one more,
    read-only statement, to say why."""
    received_at = time.time()
    failed = frozenset(g.uuid for g in facts.gpus if g.health is Health.FAILED)
    digest = facts_digest(facts) if fingerprints is not None else ""
    known = fingerprints.get(facts.hostname) if fingerprints is not None else None
    params: dict[str, Any] | None = None
    if known is not None and known.digest == digest:
        written = Written(known.fingerprint, failed, digest)  # the same facts: no plan needed
    else:
        params = host_params(facts, received_at=received_at)
        written = Written(params["host"]["props"][FINGERPRINT], failed, digest)
    if fingerprints is not None and known is not None and known.fingerprint == written.fingerprint:
        small = unchanged_params(facts, received_at=received_at, fingerprint=written.fingerprint)
        if known.failed == written.failed and batcher is not None:
            applied = await batcher.submit(small)  # no GPU fails or recovers: grouped with others
        else:
            applied = bool(await gateway.write("ingest_host_unchanged", small))
        if applied:
            fingerprints.put(facts.hostname, written)
            log.debug("ingest host=%s unchanged topology", facts.hostname)
            return HostIngestResult(facts.hostname, True, len(facts.gpus), len(facts.nics), received_at)
        fingerprints.forget(facts.hostname)  # changed elsewhere, or newer facts stored: decide in full
    if params is None:
        params = host_params(facts, received_at=received_at)
    rows = await gateway.write("ingest_host", params)
    if not rows:
        return await _explain_host_refusal(gateway, facts, received_at)
    if fingerprints is not None:
        fingerprints.put(facts.hostname, written)
    log.debug("ingest host=%s gpus=%d nics=%d", facts.hostname, len(facts.gpus), len(facts.nics))
    return HostIngestResult(facts.hostname, True, len(facts.gpus), len(facts.nics), received_at)


async def _explain_host_refusal(gateway: Gateway, facts: HostFacts, received_at: float) -> HostIngestResult:
    rows = await gateway.read(
        "ingest_host_blockers",
        {
            "host": facts.hostname,
            "gpu_uuids": [g.uuid for g in facts.gpus],
            "slice_uuids": [s.uuid for g in facts.gpus for s in g.mig_slices],
        },
    )
    row = rows[0] if rows else {}
    taken = [t for t in row.get("taken", []) if t.get("uuid") is not None]
    if taken:
        raise IngestRejected(
            ErrorKind.CONFLICT,
            "gpus.uuid",
            f"{len(taken)} GPU or MIG slice uuid(s) already belong to another host",
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


def fabric_params(facts: FabricFacts) -> dict[str, Any]:
    """ingest_fabric's parameters for one cluster's fabric (the Neo4j race tests hold the
    statement open with them)."""
    nic_keys = [nic_uuid(u.host, u.nic) for u in facts.nic_uplinks]
    homes = home_leaves(facts)
    params: dict[str, Any] = {
        "cluster": facts.cluster,
        "nic_uuids": nic_keys,
        "switch_names": [s.name for s in facts.switches],
        "switches": [
            {
                "name": s.name,
                # Every property, those the import leaves out as null: `+=` removes a null one and
                # keeps one the map leaves out, so a re-import without a leaf's rail or scalable
                # unit kept the old ones (a probe's case), and a leaf that became a spine its
                # home_leaf flag.
                "props": {
                    "name": s.name,
                    "tier": s.tier.value,
                    "cluster": facts.cluster,
                    "scalable_unit": s.scalable_unit,
                    "rail": s.rail,
                    "model": s.model,
                    "home_leaf": s.name in homes if s.tier is SwitchTier.LEAF else None,
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
    return params


async def ingest_fabric(gateway: Gateway, facts: FabricFacts) -> FabricIngestResult:
    params = fabric_params(facts)
    rows = await gateway.write("ingest_fabric", params)
    if not rows:
        raise await _fabric_rejected(gateway, facts.cluster, params["nic_uuids"], params["switch_names"])
    row = rows[0]
    log.info("ingest fabric cluster=%s switches=%d links=%d", facts.cluster, row["switches"], row["links"])
    return FabricIngestResult(facts.cluster, int(row["switches"]), int(row["links"]))


async def _fabric_rejected(
    gateway: Gateway, cluster: str, nic_keys: list[str], switch_names: list[str]
) -> IngestRejected:
    """Why ingest_fabric wrote nothing (the statement answers no row for any of these reasons)."""
    missing = (await gateway.read("missing_nics", {"nic_uuids": nic_keys}))[0]["missing"]
    if missing:
        # Refused whole, not skipped: a cable of a host the graph lacks is as often a host not sent
        # yet (the fabric before its hosts: skipped, the host would stay uncabled once sent) or a
        # typo as a host removed. Removed (DELETE /v1/hosts), its cables go from the document: the
        # message names the hosts (a NIC's key is HOST/nic/NAME), so the operator knows which.
        hosts = sorted({key.rsplit("/nic/", 1)[0] for key in missing})
        shown = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
        return IngestRejected(
            ErrorKind.INVALID,
            "nic_uplinks",
            f"{len(missing)} cabled NIC(s) are not in the graph; ingest their hosts first (hosts: {shown}), "
            "or drop the cables of a host removed (DELETE /v1/hosts) from the document",
            detail=sorted(missing)[:20],  # the same 20 on both stores (collect keeps no order)
        )
    elsewhere = await gateway.read("fabric_nics_elsewhere", {"cluster": cluster, "nic_uuids": nic_keys})
    if elsewhere:
        return IngestRejected(
            ErrorKind.CONFLICT,
            "nic_uplinks",
            f"NIC(s) {', '.join(r['nic'] for r in elsewhere[:3])} are cabled to another cluster's switch; a NIC "
            "has one cable, in one cluster's fabric (import that cluster's fabric without it first)",
            detail=elsewhere,  # rows of nic, switch and cluster, the first 20 by NIC
        )
    taken = await gateway.read("fabric_switches_taken", {"cluster": cluster, "switch_names": switch_names})
    if taken:
        return IngestRejected(
            ErrorKind.CONFLICT,
            "switches",
            f"switch(es) {', '.join(r['switch'] for r in taken[:3])} are in another cluster's fabric; "
            "a switch is in one cluster's fabric (import that cluster's fabric without it first)",
            detail=taken,  # rows of switch and cluster
        )
    # Both held when the statement ran and neither does now: another import changed the graph.
    return IngestRejected(ErrorKind.CONFLICT, "switches", "the fabric changed while this import ran; send it again")


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
    collected_at = metrics.collected_at.timestamp()
    rows = await gateway.write(
        "update_gpu_metrics",
        {
            "host": metrics.hostname,
            "collected_at": collected_at,
            "props": {"metrics_at": collected_at, "received_at": time.time()},
            "readings": by_uuid,
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
