"""What placement reads from the graph (hosts, GPUs, links) and what it answers (candidates, reasons)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, cast

if TYPE_CHECKING:
    from graphsvc.placement.mig import SliceCandidate

from graphsvc.placement.statement import Statement
from graphsvc.states import counts_as_free

# PCIe 4.0 x16, one direction, GB/s: the path between GPUs of one host without NVLink.
PCIE_GBPS = 32.0
# GB/s of a NIC of unknown speed (100 Gb/s Ethernet).
DEFAULT_NIC_GBPS = 12.5
SWITCHED_KINDS = frozenset({"nvswitch", "fabric-clique"})


class GpuRow(TypedDict, total=False):
    """A row of placement_host_gpus (its `// @row` header declares the same columns)."""

    host: str
    rack: str | None
    scalable_unit: str | None
    leaves: list[str] | None
    pod: str | None
    cluster: str | None
    received_at: float | None
    uuid: str
    index: int
    model: str
    memory_mib: int | None
    state: str
    health: str | None
    temperature_c: float | None
    utilization_pct: float | None
    domain: str | None
    domain_kind: str | None
    nic: str | None
    rail: int | None
    nic_rate_gbps: float | None
    nic_share_rate_gbps: float | None
    via: str | None
    leaf: str | None
    nvswitch_gbps: float | None
    lease_expires_at: float | None
    mig_mode: bool | None
    nic_state: str | None
    nvlink_errors: int
    xid_errors: int
    nic_errors: int
    memory_used_mib: int | None


class GpuMap(GpuRow, total=False):
    """A GPU's entry of placement_host_topology as a row (`topology_gpu` reads it): a GpuRow
    without the host's fields or the live ones, with its direct NVLink peers as [uuid, GB/s] pairs."""

    peers: list[list[object]]


class LiveEntry(NamedTuple):
    """A free GPU's entry in a host map (fragment placement_host_maps), its fields in the order
    the fragment lists them: what changes between host documents. The reply holds a list per
    GPU, not a map (the keys were ~40% of a multi-host reply)."""

    uuid: str
    state: str | None
    health: str | None
    temperature_c: float | None
    utilization_pct: float | None
    lease_expires_at: float | None
    memory_used_mib: int | None
    nvlink_errors: int | None
    xid_errors: int | None


HOST_MAP_LIVE_FIELDS = LiveEntry._fields
LIVE_LEASE = HOST_MAP_LIVE_FIELDS.index("lease_expires_at")

# The fields of a GPU's entry in placement_host_topology, in its order: what changes only with
# the host's document or its cluster's fabric, kept per host between requests.
HOST_TOPOLOGY_GPU_FIELDS = (
    "uuid", "index", "model", "memory_mib", "domain", "domain_kind", "nic", "rail", "nic_rate_gbps",
    "nic_share_rate_gbps", "via", "leaf", "nic_state", "nvswitch_gbps", "mig_mode", "peers", "nic_errors",
)  # fmt: skip


def topology_gpu(host: str, entry: Sequence[object]) -> Gpu:
    """A GPU as its topology entry (HOST_TOPOLOGY_GPU_FIELDS order) describes it, NVLink peers
    included; the fields that change between documents at their defaults until `Gpu.with_live`
    puts a host map's entry over them. Kept per host between requests (topology_cache)."""
    row = cast(GpuMap, dict(zip(HOST_TOPOLOGY_GPU_FIELDS, entry, strict=True)))
    gpu = Gpu.from_row(host, row)
    for peer, gbps in cast(list[list[object]], row.get("peers") or []):
        gpu.direct[str(peer)] = float(cast(float, gbps) or 0.0)
    return gpu


class HostMap(TypedDict, total=False):
    """One host in the one-statement candidate queries (fragment placement_host_maps)."""

    name: str
    received_at: float | None
    site: str | None
    topology: str | None  # facts_fingerprint/fabric_digest: the key its topology is kept under
    gpus: list[list[Any]]  # each a free GPU's live entry in HOST_MAP_LIVE_FIELDS order


class TopologyRow(TypedDict, total=False):
    """One host of placement_host_topology: what changes only with its document or the fabric."""

    name: str
    topology: str | None
    rack: str | None
    scalable_unit: str | None
    leaves: list[str] | None
    spines: list[str] | None
    cores: list[str] | None
    pod: str | None
    cluster: str | None
    gpus: list[list[object]]  # each GPU's entry in HOST_TOPOLOGY_GPU_FIELDS order


class FitUnit(TypedDict, total=False):
    """A qualifying unit (host, NVLink domain or leaf) of a one-statement candidate query."""

    unit: str
    free: int
    hosts: list[str]  # a domain's hosts with a usable GPU
    members: list[list[object]]  # a leaf's hosts, [name, free], in the order Python fills them
    window: int  # how many of them the statement read


class BlockRow(TypedDict):
    """A largest-free-block entry (fragment placement_free_blocks); null when there is none."""

    unit: str | None
    free: int | None


class FitRow(TypedDict):
    """The one row of placement_hosts_fit, placement_domains_fit and placement_leaves_fit."""

    scanned: int
    found: list[FitUnit]
    hosts: list[HostMap]
    host_blocks: list[BlockRow]
    domain_blocks: list[BlockRow]


@dataclass
class Gpu:
    uuid: str
    index: int
    host: str
    model: str
    memory_mib: int | None
    state: str
    health: str | None
    temperature_c: float | None
    utilization_pct: float | None
    nvlink_domain: str | None
    domain_kind: str | None
    nic: str | None
    rail: int | None
    nic_rate_gbps: float | None
    via: str | None
    leaf: str | None
    # MIG enabled: the GPU is partitioned into slices, so it is never offered whole.
    mig_mode: bool = False
    nic_state: str | None = None  # the nearest NIC's port state ("active", "down", ...), None if unknown
    nvlink_errors: int = 0  # NVLink replay + recovery + CRC errors counted since the driver loaded
    xid_errors: int = 0  # critical XIDs the collector saw on it
    nic_errors: int = 0  # its nearest NIC port's symbol, link-downed and receive errors
    memory_used_mib: int | None = None  # device memory in use (NVML), whoever uses it
    # Gb/s of the NIC ports serving it, each shared port's rate split among the GPUs it serves
    # (graphsvc.ingest.host_plan.nic_share_rates); None or 0: unknown (a graph written before it).
    nic_share_rate_gbps: float | None = None
    # Filled from NVLink edges: total GB/s to switches, direct GB/s per peer uuid.
    switch_gbps: float = 0.0
    direct: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def from_row(host: str, row: GpuRow) -> Gpu:
        """The GPU a placement read's row (or a kept topology entry) describes. A row without an
        index is a GPU a host removal deleted while the read ran (Neo4j read committed: its
        properties read as null): `int(None)` escaped a reserve as a bare TypeError (a 500; a
        tester's race). It becomes a GPU no request is offered (state "removed", as "other-site"
        is never eligible), logged, and the reserve answers from the GPUs that are still there."""
        index = row.get("index")
        gone = index is None
        if gone:
            logging.getLogger(__name__).warning(
                "host=%s gpu=%s read without an index (removed while read): not offered", host, row.get("uuid")
            )
        gpu = Gpu(
            uuid=row.get("uuid") or "",
            index=-1 if index is None else int(index),
            host=host,
            model=row.get("model") or "",
            memory_mib=row.get("memory_mib"),
            state="free",
            health=None,
            temperature_c=None,
            utilization_pct=None,
            nvlink_domain=row.get("domain"),
            domain_kind=row.get("domain_kind"),
            nic=row.get("nic"),
            rail=row.get("rail"),
            nic_rate_gbps=row.get("nic_rate_gbps"),
            nic_share_rate_gbps=row.get("nic_share_rate_gbps"),
            via=row.get("via"),
            leaf=row.get("leaf"),
            switch_gbps=float(row.get("nvswitch_gbps") or 0.0),
            mig_mode=bool(row.get("mig_mode")),
            nic_state=row.get("nic_state"),
            nic_errors=int(row.get("nic_errors") or 0),
        )
        gpu._take_live(
            row.get("uuid") or "", "removed" if gone else row.get("state"), row.get("health"),
            row.get("temperature_c"), row.get("utilization_pct"), row.get("lease_expires_at"),
            row.get("memory_used_mib"), row.get("nvlink_errors"), row.get("xid_errors"),
        )  # fmt: skip
        return gpu

    def with_live(self, live: Sequence[Any]) -> Gpu:
        """A copy of this GPU (a kept topology entry, never changed) with a host map's live entry
        (a LiveEntry's fields, in order) over it. Copied field by field, not rebuilt from a merged
        row: joining ~200 GPUs per multi-host request that way cost ~1 ms more at 100k GPUs
        (docs/benchmarks.md, stop 37)."""
        gpu = object.__new__(Gpu)
        gpu.__dict__.update(self.__dict__)
        gpu.direct = dict(self.direct)
        gpu._take_live(*live)
        return gpu

    def _take_live(
        self,
        uuid: str,
        state: str | None,
        health: str | None,
        temperature_c: float | None,
        utilization_pct: float | None,
        lease_expires_at: float | None,
        memory_used_mib: int | None,
        nvlink_errors: int | None,
        xid_errors: int | None,
    ) -> None:
        """The live fields (LiveEntry's, in its order) read by one rule, from a row or a host
        map's entry: no state is "free", no error count is 0. The lease is not the GPU's: the
        engine settles it (`PlacementEngine._settle`)."""
        self.uuid = uuid
        self.state = state or "free"
        self.health = health
        self.temperature_c = temperature_c
        self.utilization_pct = utilization_pct
        self.memory_used_mib = memory_used_mib
        self.nvlink_errors = int(nvlink_errors or 0)
        self.xid_errors = int(xid_errors or 0)

    @property
    def nic_gbps(self) -> float:
        """GB/s this GPU sends to other hosts at: its share of the NIC ports serving it (four EFA
        ports on an AWS p5, both ports of a dual-port NIC), else its nearest NIC's rate (a GPU
        row of a graph written before the share was), else a 100 Gb/s guess."""
        rate = self.nic_share_rate_gbps or self.nic_rate_gbps
        return (rate / 8) if rate else DEFAULT_NIC_GBPS


def nvlink_gbps(a: Gpu, b: Gpu) -> float | None:
    """GB/s of the direct NVLink path between two GPUs, or None when they have none."""
    if b.uuid in a.direct:
        return a.direct[b.uuid]
    if a.nvlink_domain is not None and a.nvlink_domain == b.nvlink_domain and a.domain_kind in SWITCHED_KINDS:
        if a.domain_kind == "nvswitch" and a.host != b.host:
            return None
        return min(a.switch_gbps, b.switch_gbps) or None
    return None


@dataclass
class Host:
    name: str
    rack: str | None
    scalable_unit: str | None
    leaves: list[str]
    pod: str | None
    received_at: float | None
    gpus: list[Gpu]
    site: str | None = None  # the site owning the host's cluster (graphsvc/sites/locality.py)
    cluster: str | None = None  # the host's cluster: one fabric (locality.site_key)
    spines: frozenset[str] = frozenset()  # above its leaves: hosts sharing one are 3 hops apart
    cores: frozenset[str] = frozenset()  # above its spines: hosts sharing one are 5 hops apart

    @cached_property
    def leaf_set(self) -> frozenset[str]:
        return frozenset(self.leaves)

    @property
    def free(self) -> list[Gpu]:
        """Free GPUs as the counters count them: a failed GPU is never free."""
        return [g for g in self.gpus if counts_as_free(g.state, g.health)]


def leaf_units(hosts: Iterable[Host]) -> dict[str, str]:
    """Each host's leaf unit: of the leaves it reaches, the one most of these hosts reach (ties by
    name). Hosts of a rail-optimised unit reach the same leaves, one per rail, and all name the
    first; a host whose rail-0 NIC has no cable reaches the other seven, and was a leaf unit of
    its own (keyed by its first leaf, rail 1) where it meets the others on rails 1-7. Every host
    keyed by a leaf is cabled to it: a leaf unit is always one IB hop wide. Used wherever hosts
    are grouped by leaf: shaped jobs' leaf tier, the engine's groups across hosts, a domain's trays."""
    hosts = list(hosts)
    reach = Counter(leaf for h in hosts for leaf in set(h.leaves))
    return {h.name: min(h.leaves, key=lambda leaf: (-reach[leaf], leaf)) for h in hosts if h.leaves}


def fabric_islands(hosts: Iterable[Host]) -> dict[str, str]:
    """Each cabled host's island within its cluster, as a suffix of the cluster's name: "" for
    the largest (ties by first host name), "#2", "#3" ... for the others. Hosts sharing a leaf,
    spine or core (Host.leaves, .spines, .cores) are one island; no switch joins two islands, so
    no job spans them (shaped placement's cluster tier joined leaf islands and reported a NIC's
    bandwidth between hosts with no path; a probe's case). Hosts no fabric cables are one unit
    "#no-fabric" of their own where their cluster has cabled hosts (they shared the largest
    island's name, so a job spanned it and them with no path known), and left out (the cluster
    itself) where it has none, as in a cluster whose fabric was never imported."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    every = list(hosts)
    cabled = [h for h in every if h.leaves]
    for h in cabled:
        for switch in (*h.leaves, *h.spines, *h.cores):
            parent[find(f"h:{h.name}")] = find(f"s:{h.cluster}/{switch}")
    members: dict[tuple[str | None, str], list[str]] = {}
    for h in cabled:
        members.setdefault((h.cluster, find(f"h:{h.name}")), []).append(h.name)
    out: dict[str, str] = {}
    by_cluster: dict[str | None, list[list[str]]] = {}
    for (cluster, _root), names in members.items():
        by_cluster.setdefault(cluster, []).append(sorted(names))
    for islands in by_cluster.values():
        for n, names in enumerate(sorted(islands, key=lambda names: (-len(names), names[0]))):
            out.update((name, "" if n == 0 else f"#{n + 1}") for name in names)
    out.update((h.name, NO_FABRIC) for h in every if not h.leaves and h.cluster in by_cluster)
    return out


NO_FABRIC = "#no-fabric"
"""The island suffix of a host no fabric cables, in a cluster where others are cabled."""


def hops(a: Host, b: Host) -> int | None:
    """Switches crossed between two hosts' NICs, up to the lowest switch above both and down: a
    shared leaf 1, a shared spine 3, a shared core 5 (graphsvc.ingest.fabric_plan: the switches
    one and two levels above a host's leaves, whatever their tiers); mixed levels 2 or 4. None when not
    known (a host no fabric cables) or not joined: two clusters (two fabrics), or no switch above
    both (leaf islands, or pods no core joins). A pod each said 3 or 5: 5 for dual-plane hosts
    that share a second plane's spine (3), and 5 for leaf islands with no path (a probe's cases)."""
    if a.name == b.name:
        return 0
    if not a.leaves or not b.leaves:
        return None
    if a.cluster is not None and b.cluster is not None and a.cluster != b.cluster:
        return None
    up_a, up_b = (a.leaf_set, a.spines, a.cores), (b.leaf_set, b.spines, b.cores)
    for levels, crossed in _MEETINGS:
        if any(not up_a[i].isdisjoint(up_b[j]) for i, j in levels):
            return crossed
    return None


# Where two hosts may meet, by the levels above their NICs (0: the switch a NIC is cabled to, 1:
# one above, 2: two above) on each side, and the switches crossed then, fewest first. Mixed levels
# count too: a host cabled to a spine meets a host under that spine's leaf in 2.
_MEETINGS: tuple[tuple[tuple[tuple[int, int], ...], int], ...] = (
    (((0, 0),), 1),
    (((0, 1), (1, 0)), 2),
    (((1, 1), (0, 2), (2, 0)), 3),
    (((1, 2), (2, 1)), 4),
    (((2, 2),), 5),
)


def hop_keys(host: Host, limit: int) -> frozenset[str]:
    """The switches whose hosts may form a set with this one under a hop limit of 3 or more: each
    of its spines (3 hops), and each of its cores as well (4 or more: a host whose leaf is right
    under a core meets one two levels below it in 4). Under 3 or 5 and more, all hosts keyed by
    one switch are within the limit of each other (they meet at it); under 4 two hosts two levels
    below a core are not. A host no spine is above is keyed by its leaves (it meets others there
    only)."""
    keys = host.spines if host.spines else frozenset(host.leaves)
    return keys | host.cores if limit >= 4 else keys


def hop_groups(hosts: Iterable[Host], limit: int | None) -> list[list[Host]]:
    """Hosts grouped so that any set within one group meets a hop limit (`None`: no limit, one
    group): one group per switch of their hop_keys, hosts in the order given. A host under two
    planes is in both planes' groups. Groups with the same hosts are one (every spine of a clean
    pod has the pod's hosts), and a group inside another is dropped (a pod inside the cores'
    group under a limit of 5): the searches choose the fullest hosts of each group.

    Hosts are first grouped by their keys (a pod's hosts share one set), and the groups decided
    over those few sets: per host and switch it cost 40-60 ms at 100k GPUs (16 spines a host)."""
    hosts = list(hosts)
    if limit is None:
        return [hosts] if hosts else []
    by_keys: dict[frozenset[str], list[int]] = {}
    for n, host in enumerate(hosts):
        by_keys.setdefault(hop_keys(host, limit), []).append(n)
    kinds = list(by_keys)
    under: dict[str, set[int]] = {}  # switch -> the key sets (by position in `kinds`) it is in
    for k, keys in enumerate(kinds):
        for key in keys:
            under.setdefault(key, set()).add(k)
    unique = list(dict.fromkeys(frozenset(under[key]) for key in sorted(under)))
    groups = []
    for members in unique:
        if limit != 4 and any(members < other for other in unique):
            continue  # (under 4 a core's group is no clique: a spine's inside it may hold a set it does not)
        positions = sorted(n for k in members for n in by_keys[kinds[k]])
        groups.append([hosts[n] for n in positions])
    return groups


@dataclass
class InterSite:
    """The slowest link between sites a placement spans (only when the request allows spanning)."""

    sites: list[str]
    link: str
    bandwidth_gbps: float | None
    latency_ms: float | None
    per_gpu_gbps: float | None
    missing: str | None = None


@dataclass
class Candidate:
    gpus: list[Gpu]
    hosts: list[Host]
    score: float
    bottleneck_gbps: float | None
    max_ib_hops: int
    rank_order: list[str]
    largest_free_block_before: int
    largest_free_block_after: int
    reason: str
    as_of_s: float
    sort_key: tuple[float, ...] = ()
    inter_site: InterSite | None = None
    # False: two of its hosts have no InfiniBand path the graph knows (a host no fabric cables, two
    # clusters, or switches no higher switch joins); `max_ib_hops` then counts the pairs that have
    # one. Only a request without a hop limit places such a set.
    ib_hops_known: bool = True


@dataclass
class InfeasibleReason:
    constraint: str
    message: str
    nearest_feasible: str | None = None


@dataclass
class PlacementResult:
    candidates: list[Candidate]
    infeasible: list[InfeasibleReason]
    searched_units: int
    elapsed_ms: float
    # The candidate statements the search ran, in order, with their parameters (for `explain`).
    statements: list[Statement] = field(default_factory=list)
    # A MIG request (`2x 3g.40gb`) is answered in slices, never in whole GPUs (placement.mig).
    mig_candidates: list[SliceCandidate] = field(default_factory=list)
