"""Each host's topology, kept in the process between placement requests (#15, Deliver 1).

Of what placement judges a free GPU by, most changes only when its host sends a document that
changes the topology or its cluster's fabric is imported again: its index, model, NVLink domain,
nearest NIC (rail, speed, port state and errors), that NIC's leaf and its NVLink peers, and the
host's rack and fabric position. Reading those per GPU was most of a multi-host candidate
statement's store time and half its reply; the candidate statements now read only what changes
between documents (state, health, load, lease, error counts: fragments/placement_host_maps) and
each host's topology key, facts_fingerprint/fabric_digest. A host whose key this cache holds is
joined from it; the others are read in one placement_host_topology statement and kept.

Free state is never kept: which GPUs are free, and their health and load, come from the store
at decision time. A host without a key (no fingerprint: never ingested whole) is read each time
and never kept. The cache holds at most `capacity` hosts, least recently used dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from graphsvc.placement.model import Gpu, HostMap, TopologyRow, topology_gpu

# Hosts kept: a 100k-GPU cluster of 8-GPU hosts has 12,500 (~3 KB each); GB200 trays hold 4.
CAPACITY = 32768


@dataclass(frozen=True)
class KeptHost:
    """A host's topology as placement_host_topology read it: each GPU by uuid, built once from its
    entry (`topology_gpu`) and copied with the live fields per request (`Gpu.with_live`)."""

    topology: str | None
    rack: str | None
    scalable_unit: str | None
    leaves: tuple[str, ...]
    pod: str | None
    cluster: str | None
    gpus: dict[str, Gpu]  # uuid -> the GPU as its topology entry describes it; never changed
    spines: frozenset[str] = frozenset()
    cores: frozenset[str] = frozenset()

    @staticmethod
    def from_row(row: TopologyRow) -> KeptHost:
        return KeptHost(
            topology=row.get("topology"),
            rack=row.get("rack"),
            scalable_unit=row.get("scalable_unit"),
            leaves=tuple(row.get("leaves") or ()),
            pod=row.get("pod"),
            cluster=row.get("cluster"),
            spines=frozenset(row.get("spines") or ()),
            cores=frozenset(row.get("cores") or ()),
            gpus={str(entry[0]): topology_gpu(row["name"], entry) for entry in row.get("gpus") or []},
        )


class TopologyCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._hosts: OrderedDict[str, KeptHost] = OrderedDict()

    def __len__(self) -> int:
        return len(self._hosts)

    def missing(self, maps: Iterable[HostMap | None]) -> list[str]:
        """The hosts among `maps` whose topology must be read: no key, or not the key kept."""
        out = []
        for m in maps:
            if m is None:
                continue
            key = m.get("topology")
            kept = self._hosts.get(m["name"])
            if key is None or kept is None or kept.topology != key:
                out.append(m["name"])
        return out

    def keep(self, rows: Iterable[TopologyRow]) -> dict[str, KeptHost]:
        """Hosts just read: kept when they have a key; all of them returned, for this request."""
        read = {}
        for row in rows:
            host = KeptHost.from_row(row)
            read[row["name"]] = host
            if host.topology is not None:
                self._hosts[row["name"]] = host
                self._hosts.move_to_end(row["name"])
        while len(self._hosts) > self.capacity:
            self._hosts.popitem(last=False)
        return read

    def join(self, maps: Iterable[HostMap | None], read: dict[str, KeptHost]) -> list[tuple[HostMap, KeptHost]]:
        """Each host map with its topology: as just read, else as kept. A host whose topology is
        in neither (deleted between the two statements) is left out, as a deleted host is."""
        out = []
        for m in maps:
            if m is None:
                continue
            name = m["name"]
            host = read.get(name)
            if host is None:
                host = self._hosts.get(name)
                if host is None:
                    continue
                self._hosts.move_to_end(name)
            out.append((m, host))
        return out
