"""GPU facts from NVML: inventory, NVLink per link, fabric clique, telemetry and health.

Works on any ``NvmlApi`` (the real driver or a replayed recording). Every call
that a driver or GPU does not support degrades to a missing fact, never a crash.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from topo_facts import GPUFact, GPUMetrics, Health, MigSliceFact, NVLinkFact, NVSwitchFact, PeerType
from topo_facts.mig import MAX_SLICES_PER_GPU, profile_name
from topo_facts.models import MAX_XIDS

from topo_collector.nvml_api import (
    NVLINK_ERROR_DL_CRC_DATA,
    NVLINK_ERROR_DL_CRC_FLIT,
    NVLINK_ERROR_DL_RECOVERY,
    NVLINK_ERROR_DL_REPLAY,
    NVLINK_MAX_LINKS,
    NVLINK_REMOTE_GPU,
    NVLINK_REMOTE_SWITCH,
    NvmlApi,
    NvmlError,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Bidirectional GB/s per NVLink lane by NVLink version (NVML's nvmlDeviceGetNvLinkVersion):
# NVLink1 20 GB/s per direction (P100), NVLink2-4 25 GB/s (V100, A100, H100), NVLink5 50 GB/s (B200).
NVLINK_GBPS_PER_LINK = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0, 6: 200.0}
FABRIC_STATE_COMPLETED = 3
RACK_SWITCH_ID = "rack-nvswitch"


def normalize_bus_id(bus_id: str) -> str:
    """NVML says 00000000:1B:00.0; sysfs says 0000:1b:00.0. Use the sysfs form."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    if len(domain) > 4 and int(domain, 16) <= 0xFFFF:
        domain = domain[-4:]
    return f"{domain}:{rest}"


@dataclass
class NvmlInventory:
    driver_version: str | None = None
    gpus: list[GPUFact] = field(default_factory=list)
    nvswitches: list[NVSwitchFact] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _opt(fn: Callable[..., _T], *args: int) -> _T | None:
    """One NVML answer, or None where this driver or GPU does not give it."""
    try:
        return fn(*args)
    except NvmlError:
        return None


def read_nvml(nv: NvmlApi) -> NvmlInventory:
    """Everything NVML tells about this host's GPUs. Raises NvmlError only if NVML is absent."""
    nv.init()
    try:
        return _read(nv)
    finally:
        with contextlib.suppress(NvmlError):
            nv.shutdown()


def _read(nv: NvmlApi) -> NvmlInventory:
    inv = NvmlInventory(driver_version=_opt(nv.driver_version))
    count = nv.device_count()
    uuids = [nv.uuid(i) for i in range(count)]
    bus_ids = [_opt(nv.pci_bus_id, i) for i in range(count)]
    gpu_by_bus = {normalize_bus_id(b): u for b, u in zip(bus_ids, uuids, strict=True) if b}
    switches: dict[str, NVSwitchFact] = {}
    for i in range(count):
        fabric = _opt(nv.fabric_info, i)
        clique: str | None = None
        if (
            fabric
            and int(fabric.get("state", 0)) == FABRIC_STATE_COMPLETED
            and fabric.get("cluster_uuid") not in (None, "", "00000000-0000-0000-0000-000000000000")
        ):
            clique = f"{fabric['cluster_uuid']}/{fabric['clique_id']}"
        links = _nvlinks(nv, i, uuids[i], gpu_by_bus, clique is not None, switches)
        memory = _opt(nv.memory, i) or {}
        cc = _opt(nv.compute_capability, i)
        mig = _opt(nv.mig_mode, i)
        numa = _opt(nv.numa_node, i)
        try:
            gpu = GPUFact(
                uuid=uuids[i],
                index=i,
                model=nv.name(i),
                memory_mib=memory["total"] // (1024 * 1024) if "total" in memory else None,
                pci_bus_id=normalize_bus_id(bus) if (bus := bus_ids[i]) else None,
                numa_node=numa if numa is not None and numa >= 0 else None,
                compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
                mig_mode=bool(mig) if mig is not None else None,
                mig_slices=_mig_slices(nv, i, memory.get("total"), inv.problems) if mig else [],
                nvlinks=links,
                nvlink_domain=clique,
                **_telemetry(nv, i, memory),
            )
        except ValueError as exc:
            inv.problems.append(f"GPU {i}: {exc}")
            continue
        inv.gpus.append(gpu)
    inv.nvswitches = sorted(switches.values(), key=lambda s: s.id)
    return inv


def _nvlinks(
    nv: NvmlApi,
    i: int,
    uuid: str,
    gpu_by_bus: dict[str, str],
    multi_node: bool,
    switches: dict[str, NVSwitchFact],
) -> list[NVLinkFact]:
    """Active links, grouped by peer: NVML reports lanes; the graph wants one edge per peer."""
    lanes: dict[tuple[PeerType, str], list[int]] = defaultdict(list)
    for link in range(NVLINK_MAX_LINKS):
        state = _opt(nv.nvlink_state, i, link)
        if not state:
            continue
        remote = _opt(nv.nvlink_remote_pci, i, link)
        kind = _opt(nv.nvlink_remote_type, i, link)
        version = _opt(nv.nvlink_version, i, link) or 0
        bus = normalize_bus_id(remote) if remote else None
        if bus is not None and bus in gpu_by_bus and kind in (None, NVLINK_REMOTE_GPU):
            if gpu_by_bus[bus] != uuid:
                lanes[(PeerType.GPU, gpu_by_bus[bus])].append(version)
            continue
        if kind not in (None, NVLINK_REMOTE_SWITCH):
            continue  # an IBM NPU or an unknown device: not part of the GPU fabric
        if multi_node or bus is None:
            # NVL72 trays see the rack's switch chips only as ports; they are one rack fabric.
            switch = NVSwitchFact(id=RACK_SWITCH_ID, location="rack")
        else:
            switch = NVSwitchFact(id=bus, pci_bus_id=bus)
        switches.setdefault(switch.id, switch)
        lanes[(PeerType.NVSWITCH, switch.id)].append(version)
    out: list[NVLinkFact] = []
    for (peer_type, peer), versions in sorted(lanes.items()):
        generation = max(versions) or None
        per_link = NVLINK_GBPS_PER_LINK.get(generation or 0, 50.0)
        out.append(
            NVLinkFact(
                peer_type=peer_type,
                peer_id=peer,
                links=len(versions),
                bandwidth_gbps=per_link * len(versions),
                generation=generation,
            )
        )
    return out


def _mig_slices(nv: NvmlApi, i: int, gpu_memory: int | None, problems: list[str]) -> list[MigSliceFact]:
    """The GPU instances of a MIG-enabled GPU, named by profile (topo_facts.mig.profile_name).

    NVML numbers MIG devices 0..max-1 with gaps where no instance is (NOT_FOUND); an index
    that fails otherwise is skipped and reported, the other slices are kept.
    """
    slots = _opt(nv.mig_device_count, i) or 0
    board_mib = gpu_memory // (1024 * 1024) if gpu_memory else None
    out: list[MigSliceFact] = []
    for j in range(min(slots, MAX_SLICES_PER_GPU)):
        dev = _opt(nv.mig_device, i, j)
        if not dev:
            continue
        memory_mib = int(dev["profile_memory_mib"]) if dev.get("profile_memory_mib") else None
        if memory_mib is None and dev.get("memory_total"):
            memory_mib = int(dev["memory_total"]) // (1024 * 1024)
        try:
            out.append(
                MigSliceFact(
                    uuid=dev["uuid"],
                    gpu_instance_id=int(dev["gpu_instance_id"]),
                    profile=profile_name(int(dev["slices"]), memory_mib or 0, board_mib),
                    memory_mib=memory_mib,
                )
            )
        except (KeyError, ValueError) as exc:
            problems.append(f"GPU {i} MIG device {j}: {exc}")
    return sorted(out, key=lambda s: s.gpu_instance_id)


def _telemetry(nv: NvmlApi, i: int, memory: dict[str, int]) -> dict[str, Any]:
    """The fields GPUFact and GPUMetrics share: what changes from one second to the next."""
    power = _opt(nv.power_mw, i)
    health, reasons, ecc, retired = _health(nv, i)
    xids = xid_errors(nv, i)
    health, reasons = xid_health(xids, health, reasons)
    return {
        **nvlink_errors(nv, i),
        "xid_errors": xids,
        "health": health,
        "health_reasons": reasons,
        "ecc_uncorrected": ecc,
        "retired_pages": retired,
        "temperature_c": _opt(nv.temperature, i),
        "power_w": power / 1000 if power is not None else None,
        "utilization_pct": _opt(nv.utilization, i),
        "memory_used_mib": memory["used"] // (1024 * 1024) if "used" in memory else None,
    }


def _health(nv: NvmlApi, i: int) -> tuple[Health, list[str], int | None, int | None]:
    """Failed on a row-remapping failure; degraded on uncorrected ECC, pending remaps or retired pages."""
    reasons: list[str] = []
    ecc = _opt(nv.ecc_uncorrected, i)
    retired = _opt(nv.retired_pages, i)
    rows = _opt(nv.remapped_rows, i)
    known = any(v is not None for v in (ecc, retired, rows))
    health = Health.OK if known else Health.UNKNOWN
    if rows and rows.get("failure"):
        health = Health.FAILED
        reasons.append("row remapping failed: the GPU needs service")
    if rows and rows.get("pending"):
        reasons.append("row remapping pending: reset the GPU")
    if ecc:
        reasons.append(f"{ecc} uncorrected ECC errors since boot")
    if retired:
        reasons.append(f"{retired} pages retired (double-bit ECC)")
    if health is not Health.FAILED and reasons:
        health = Health.DEGRADED
    return health, reasons, ecc, retired


# ---- NVLink error counters and XIDs (#17) ---------------------------------------------------

# What a critical XID says about the GPU (NVIDIA's XID catalogue, "Xid Errors" in the GPU
# deployment and management documentation). FAILED: the GPU cannot be trusted with work until it
# is reset or serviced, so it leaves every free count; DEGRADED: it still runs work, placement
# avoids it by default. Codes not listed leave the health as NVML's counters say.
XID_HEALTH: dict[int, tuple[Health, str]] = {
    48: (Health.FAILED, "double-bit ECC error"),
    63: (Health.DEGRADED, "ECC page retirement or row remapping recorded: reset to apply"),
    64: (Health.FAILED, "ECC page retirement or row remapping failed"),
    74: (Health.DEGRADED, "NVLink error"),
    79: (Health.FAILED, "GPU has fallen off the bus"),
    94: (Health.DEGRADED, "contained ECC error: the application was stopped"),
    95: (Health.FAILED, "uncontained ECC error: reset the GPU"),
}
_SEVERITY = {Health.UNKNOWN: 0, Health.OK: 1, Health.DEGRADED: 2, Health.FAILED: 3}


def xid_errors(nv: NvmlApi, i: int) -> list[int]:
    """The critical XIDs seen on GPU i (the last MAX_XIDS), or none where NVML has no events."""
    return (_opt(nv.xid_errors, i) or [])[-MAX_XIDS:]


def xid_health(xids: list[int], health: Health, reasons: list[str]) -> tuple[Health, list[str]]:
    """The health after the XIDs seen: the worse of NVML's counters and XID_HEALTH, with a reason each."""
    out = list(reasons)
    for code in xids:
        if code in XID_HEALTH:
            verdict, why = XID_HEALTH[code]
            out.append(f"XID {code}: {why}")
            if _SEVERITY[verdict] > _SEVERITY[health]:
                health = verdict
    return health, out


def nvlink_errors(nv: NvmlApi, i: int) -> dict[str, int | None]:
    """Replay, recovery and CRC error counters summed over the GPU's active links (None: not known)."""
    totals: dict[str, int | None] = {
        "nvlink_replay_errors": None,
        "nvlink_recovery_errors": None,
        "nvlink_crc_errors": None,
    }
    counters = (
        ("nvlink_replay_errors", NVLINK_ERROR_DL_REPLAY),
        ("nvlink_recovery_errors", NVLINK_ERROR_DL_RECOVERY),
        ("nvlink_crc_errors", NVLINK_ERROR_DL_CRC_FLIT),
        ("nvlink_crc_errors", NVLINK_ERROR_DL_CRC_DATA),
    )
    for link in range(NVLINK_MAX_LINKS):
        if not _opt(nv.nvlink_state, i, link):
            continue
        for name, counter in counters:
            value = _opt(nv.nvlink_error_counter, i, link, counter)
            if value is not None:
                totals[name] = (totals[name] or 0) + value
    return totals


def read_metrics(nv: NvmlApi) -> list[GPUMetrics]:
    """Only what changes between full collections: cheap enough to run every few seconds."""
    nv.init()
    try:
        out: list[GPUMetrics] = []
        for i in range(nv.device_count()):
            out.append(GPUMetrics(uuid=nv.uuid(i), **_telemetry(nv, i, _opt(nv.memory, i) or {})))
        return out
    finally:
        with contextlib.suppress(NvmlError):
            nv.shutdown()
