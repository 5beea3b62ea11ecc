"""Synthetic clusters from the reference architectures, from a few hosts to 100,000 GPUs.

They are lists of ``HostFacts`` plus one ``FabricFacts`` and go through the same
ingest path as facts from real collectors. Fabric shapes:

* DGX SuperPOD H100: scalable units of 32 nodes (31 in the first SU: one slot is
  the UFM), 8 rails, one leaf per rail per SU. Up to 4 SU every leaf reaches every
  spine (spines per the RA table: 4, 8, 16, 16). Beyond 4 SU, groups of 4 SU form
  pods with their own 16 spines, and pods meet at a core tier.
* GB200 NVL72: 18 trays x 4 GPUs a rack, one NVLink clique per rack, 8 racks an SU,
  4 rails with a leaf per 32 trays per rail.
* A100 PCIe / L40S / DGX-1: leaves of 32 hosts' NICs each.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass, field

from topo_facts import FabricFacts, FabricSwitch, HostFacts, NICUplink, SwitchTier, SwitchUplink

from graphsvc.synthetic.hosts import HostBuilder, HostSpec, a100_pcie, dgx1_v100, dgx_h100, gb200_tray, l40s

NDR_GBPS = 50.0  # 400 Gb/s per cable, in GB/s
H100_SPINES_BY_SU = {1: 4, 2: 8, 3: 16, 4: 16}


@dataclass
class SyntheticCluster:
    name: str
    hosts: list[HostFacts] = field(default_factory=list)
    switches: list[FabricSwitch] = field(default_factory=list)
    nic_uplinks: list[NICUplink] = field(default_factory=list)
    switch_uplinks: list[SwitchUplink] = field(default_factory=list)

    def fabric(self) -> FabricFacts:
        return FabricFacts(
            cluster=self.name,
            source="synthetic",
            switches=self.switches,
            nic_uplinks=self.nic_uplinks,
            switch_uplinks=self.switch_uplinks,
        )

    def gpus_by_model(self) -> dict[str, int]:
        return dict(Counter(g.model for h in self.hosts for g in h.gpus))

    @property
    def gpu_count(self) -> int:
        return sum(len(h.gpus) for h in self.hosts)


def _seed(seed: int, name: str) -> int:
    return zlib.crc32(f"{seed}:{name}".encode())


def _cable_hosts(cluster: SyntheticCluster, hosts: list[HostFacts], leaves_for_rail: dict[int, list[str]]) -> None:
    """NIC with rail r of the k-th host goes to leaf k // 32 of rail r."""
    for k, host in enumerate(hosts):
        for nic in host.nics:
            rail = nic.rail or 0
            leaves = leaves_for_rail[rail % len(leaves_for_rail)]
            leaf = leaves[min(k // 32, len(leaves) - 1)]
            gbps = (nic.rate_gbps or 400) / 8
            cluster.nic_uplinks.append(NICUplink(host=host.hostname, nic=nic.name, switch=leaf, bandwidth_gbps=gbps))


def _full_bipartite(cluster: SyntheticCluster, lower: list[str], upper: list[str], cables: int) -> None:
    per_pair = max(1, cables // max(1, len(upper)))
    for lo in lower:
        for hi in upper:
            cluster.switch_uplinks.append(
                SwitchUplink(lower=lo, upper=hi, links=per_pair, bandwidth_gbps=per_pair * NDR_GBPS)
            )


def add_superpod_h100(cluster: SyntheticCluster, sus: int, *, seed: int, prefix: str = "h100") -> list[str]:
    """Adds SUs of DGX H100 with their leaves; returns the leaves (spines are added by the caller)."""
    leaves: list[str] = []
    for su in range(1, sus + 1):
        su_name = f"{prefix}-su{su}"
        nodes = 31 if su == 1 else 32
        hosts = [
            dgx_h100(
                HostSpec(
                    f"{su_name}-n{n:02d}",
                    cluster.name,
                    f"{su_name}-r{(n - 1) // 4 + 1:02d}",
                    su_name,
                    _seed(seed, f"{su_name}-n{n:02d}"),
                )
            )
            for n in range(1, nodes + 1)
        ]
        rails: dict[int, list[str]] = {}
        for rail in range(8):
            leaf = f"{su_name}-leaf-r{rail}"
            cluster.switches.append(
                FabricSwitch(name=leaf, tier=SwitchTier.LEAF, scalable_unit=su_name, rail=rail, model="NVIDIA QM9700")
            )
            rails[rail] = [leaf]
            leaves.append(leaf)
        cluster.hosts.extend(hosts)
        _cable_hosts(cluster, hosts, rails)
    return leaves


def add_spines(cluster: SyntheticCluster, leaves: list[str], *, prefix: str, sus: int) -> None:
    """Two tiers up to 4 SU; beyond that, pods of 4 SU (32 leaves, 16 spines) under a core tier."""
    if sus <= 4:
        spines = [f"{prefix}-spine{k:02d}" for k in range(H100_SPINES_BY_SU.get(sus, 16))]
        for s in spines:
            cluster.switches.append(FabricSwitch(name=s, tier=SwitchTier.SPINE, model="NVIDIA QM9700"))
        _full_bipartite(cluster, leaves, spines, cables=32)
        return
    pods = math.ceil(len(leaves) / 32)
    cores = [f"{prefix}-core{k:02d}" for k in range(16)]
    for c in cores:
        cluster.switches.append(FabricSwitch(name=c, tier=SwitchTier.CORE, model="NVIDIA QM9700"))
    for p in range(pods):
        pod_leaves = leaves[p * 32 : (p + 1) * 32]
        spines = [f"{prefix}-pod{p + 1}-spine{k:02d}" for k in range(16)]
        for s in spines:
            cluster.switches.append(FabricSwitch(name=s, tier=SwitchTier.SPINE, model="NVIDIA QM9700"))
        _full_bipartite(cluster, pod_leaves, spines, cables=32)
        _full_bipartite(cluster, spines, cores, cables=32)


def add_nvl72(cluster: SyntheticCluster, racks: int, *, seed: int, prefix: str = "gb200") -> list[str]:
    leaves: list[str] = []
    trays: list[HostFacts] = []
    for r in range(1, racks + 1):
        rack = f"{prefix}-rack{r:02d}"
        su = f"{prefix}-su{(r - 1) // 8 + 1}"
        clique = f"{cluster.name}/{rack}/clique-0"
        for t in range(1, 19):
            name = f"{rack}-t{t:02d}"
            trays.append(gb200_tray(HostSpec(name, cluster.name, rack, su, _seed(seed, name)), clique))
    per_su = 8 * 18
    for s in range(math.ceil(len(trays) / per_su)):
        su_trays = trays[s * per_su : (s + 1) * per_su]
        su = f"{prefix}-su{s + 1}"
        rails: dict[int, list[str]] = {}
        for rail in range(4):
            rails[rail] = []
            for k in range(math.ceil(len(su_trays) / 32)):
                leaf = f"{su}-leaf-r{rail}-{k}"
                cluster.switches.append(
                    FabricSwitch(name=leaf, tier=SwitchTier.LEAF, scalable_unit=su, rail=rail, model="NVIDIA QM9700")
                )
                rails[rail].append(leaf)
                leaves.append(leaf)
        _cable_hosts(cluster, su_trays, rails)
    cluster.hosts.extend(trays)
    return leaves


def add_pcie_hosts(cluster: SyntheticCluster, builder: HostBuilder, count: int, *, seed: int, prefix: str) -> list[str]:
    hosts = [
        builder(
            HostSpec(
                f"{prefix}-{n:03d}",
                cluster.name,
                f"{prefix}-r{(n - 1) // 8 + 1:02d}",
                None,
                _seed(seed, f"{prefix}-{n:03d}"),
            )
        )
        for n in range(1, count + 1)
    ]
    leaves = [f"{prefix}-leaf{k}" for k in range(math.ceil(count / 32))]
    for leaf in leaves:
        cluster.switches.append(FabricSwitch(name=leaf, tier=SwitchTier.LEAF, model="generic"))
    cluster.hosts.extend(hosts)
    _cable_hosts(cluster, hosts, dict.fromkeys(range(8), leaves))
    return leaves


@dataclass(frozen=True)
class Profile:
    """A named cluster shape with its size knobs, e.g. ``superpod-h100:sus=4``."""

    kind: str
    params: dict[str, int]

    @staticmethod
    def parse(text: str) -> Profile:
        kind, _, rest = text.partition(":")
        params: dict[str, int] = {}
        for part in filter(None, rest.split(",")):
            key, eq, value = part.partition("=")
            if not eq or not value.strip().isdigit():
                raise ValueError(f"profile parameter {part!r}: expected key=integer")
            params[key.strip()] = int(value)
        if kind not in PROFILES:
            raise ValueError(f"unknown profile {kind!r}; known: {', '.join(sorted(PROFILES))}")
        allowed = PROFILES[kind]
        unknown = set(params) - set(allowed)
        if unknown:
            raise ValueError(f"profile {kind!r} takes {sorted(allowed)}, not {sorted(unknown)}")
        return Profile(kind, {**allowed, **params})


PROFILES: dict[str, dict[str, int]] = {
    # The demo: >= 1,000 GPUs of every family.
    "demo": {"sus": 4, "nvl72_racks": 1, "a100_hosts": 8, "l40s_hosts": 8, "seed": 7},
    "superpod-h100": {"sus": 1, "seed": 7},
    "nvl72": {"racks": 1, "seed": 7},
    "a100-pcie": {"hosts": 4, "seed": 7},
    "l40s": {"hosts": 4, "seed": 7},
    "dgx1": {"hosts": 2, "seed": 7},
    # SuperPOD H100 sized by GPU count (8 per host, 32 hosts an SU), for benchmarks.
    "sized": {"gpus": 1024, "seed": 7},
}


def build(profile: Profile | str, *, cluster: str = "default") -> SyntheticCluster:
    p = Profile.parse(profile) if isinstance(profile, str) else profile
    c = SyntheticCluster(cluster)
    seed = p.params["seed"]
    if p.kind == "demo":
        leaves = add_superpod_h100(c, p.params["sus"], seed=seed)
        leaves += add_nvl72(c, p.params["nvl72_racks"], seed=seed)
        leaves += add_pcie_hosts(c, a100_pcie, p.params["a100_hosts"], seed=seed, prefix="a100")
        leaves += add_pcie_hosts(c, l40s, p.params["l40s_hosts"], seed=seed, prefix="l40s")
        add_spines(c, leaves, prefix="spine", sus=min(4, max(1, p.params["sus"])))
    elif p.kind == "superpod-h100":
        leaves = add_superpod_h100(c, p.params["sus"], seed=seed)
        add_spines(c, leaves, prefix="h100", sus=p.params["sus"])
    elif p.kind == "sized":
        sus = max(1, math.ceil((p.params["gpus"] // 8 + 1) / 32))
        leaves = add_superpod_h100(c, sus, seed=seed)
        add_spines(c, leaves, prefix="h100", sus=sus)
    elif p.kind == "nvl72":
        leaves = add_nvl72(c, p.params["racks"], seed=seed)
        add_spines(c, leaves, prefix="gb200", sus=min(4, max(1, math.ceil(p.params["racks"] / 8))))
    else:
        builder = {"a100-pcie": a100_pcie, "l40s": l40s, "dgx1": dgx1_v100}[p.kind]
        leaves = add_pcie_hosts(c, builder, p.params["hosts"], seed=seed, prefix=p.kind)
        add_spines(c, leaves, prefix=p.kind, sus=1)
    if p.kind == "sized":
        _trim(c, p.params["gpus"])
    return c


def _trim(c: SyntheticCluster, gpus: int) -> None:
    """Drop trailing hosts so the cluster has exactly ``gpus`` GPUs (rounded to hosts)."""
    keep = max(1, gpus // 8)
    kept = {h.hostname for h in c.hosts[:keep]}
    c.hosts = c.hosts[:keep]
    c.nic_uplinks = [u for u in c.nic_uplinks if u.host in kept]
