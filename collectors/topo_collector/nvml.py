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

from topo_facts import GPUFact, GPUMetrics, GPUState, Health, MigSliceFact, NVLinkFact, NVSwitchFact, PeerType
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
    NVML_ERROR_GPU_IS_LOST,
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
# The uuid of a lost GPU whose uuid no call and no earlier collection knows: GPU-lost-<host>-<index>.
LOST_UUID_PREFIX = "GPU-lost-"


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
    """One NVML answer, or None where this driver or GPU does not give it.

    A lost GPU (NVML_ERROR_GPU_IS_LOST) still raises: its missing answers are not "not
    supported", and the caller reports the whole GPU as failed instead of as a healthy GPU
    with unknown facts.
    """
    try:
        return fn(*args)
    except NvmlError as exc:
        if exc.code == NVML_ERROR_GPU_IS_LOST:
            raise
        return None


@dataclass
class GpuIdentities:
    """What earlier collections of this process learned about each GPU, so a GPU that is lost
    later (its uuid no longer readable) is still reported under the uuid the service holds.

    Keyed by PCI bus id where NVML still gives one, else by NVML index.
    """

    by_bus: dict[str, GPUFact] = field(default_factory=dict)
    by_index: dict[int, GPUFact] = field(default_factory=dict)

    def remember(self, gpus: list[GPUFact]) -> None:
        for g in gpus:
            if g.health is Health.FAILED and g.uuid.startswith(LOST_UUID_PREFIX):
                continue  # a placeholder is no identity
            self.by_index[g.index] = g
            if g.pci_bus_id:
                self.by_bus[g.pci_bus_id] = g

    def get(self, index: int, bus: str | None) -> GPUFact | None:
        if bus is not None:
            return self.by_bus.get(bus)
        return self.by_index.get(index)


def read_nvml(nv: NvmlApi, *, known: GpuIdentities | None = None, host: str | None = None) -> NvmlInventory:
    """Everything NVML tells about this host's GPUs. Raises NvmlError only if NVML is absent
    (init or the device count fails); a GPU that fails alone is reported failed (_lost_gpu).

    `known` carries GPU identities between the collections of one process (and learns this
    one's); `host` names the placeholder uuid of a lost GPU nobody knows.
    """
    nv.init()
    try:
        inv = _read(nv, known, host or "localhost")
    finally:
        with contextlib.suppress(NvmlError):
            nv.shutdown()
    if known is not None:
        known.remember(inv.gpus)
    return inv


def _read(nv: NvmlApi, known: GpuIdentities | None, host: str) -> NvmlInventory:
    inv = NvmlInventory(driver_version=_opt(nv.driver_version))
    count = nv.device_count()
    uuids: list[str | None] = []
    bus_ids: list[str | None] = []
    for i in range(count):
        # One GPU's failure is that GPU's problem: the others are read as usual.
        try:
            uuids.append(nv.uuid(i))
        except NvmlError:
            uuids.append(None)
        try:
            bus = nv.pci_bus_id(i)
        except NvmlError:
            bus = None
        bus_ids.append(normalize_bus_id(bus) if bus else None)
    gpu_by_bus = {b: u for b, u in zip(bus_ids, uuids, strict=True) if b and u}
    switches: dict[str, NVSwitchFact] = {}
    for i in range(count):
        try:
            uuid = uuids[i]
            if uuid is None:
                uuid = nv.uuid(i)  # raises again: the reason this GPU is reported failed
            gpu = _read_gpu(nv, i, uuid, bus_ids[i], gpu_by_bus, switches, inv.problems)
        except NvmlError as exc:
            gpu = _lost_gpu(nv, i, uuids[i], bus_ids[i], exc, known, host)
            inv.problems.append(f"GPU {i}: {gpu.health_reasons[0]}")
            log.error("GPU %d (%s) cannot be read: %s; reporting it as failed", i, gpu.uuid, exc)
        except ValueError as exc:
            inv.problems.append(f"GPU {i}: {exc}")
            continue
        inv.gpus.append(gpu)
    inv.nvswitches = sorted(switches.values(), key=lambda s: s.id)
    return inv


def _read_gpu(
    nv: NvmlApi,
    i: int,
    uuid: str,
    bus: str | None,
    gpu_by_bus: dict[str, str],
    switches: dict[str, NVSwitchFact],
    problems: list[str],
) -> GPUFact:
    """One GPU; NvmlError only where the GPU itself is gone (its name, or GPU_IS_LOST anywhere).

    Switches it links to are added to `switches` only once the whole GPU has been read, so a
    GPU lost half-way leaves no switch behind that nothing links to.
    """
    fabric = _opt(nv.fabric_info, i)
    clique: str | None = None
    if (
        fabric
        and int(fabric.get("state", 0)) == FABRIC_STATE_COMPLETED
        and fabric.get("cluster_uuid") not in (None, "", "00000000-0000-0000-0000-000000000000")
    ):
        clique = f"{fabric['cluster_uuid']}/{fabric['clique_id']}"
    mine: dict[str, NVSwitchFact] = {}
    links = _nvlinks(nv, i, uuid, gpu_by_bus, clique is not None, mine)
    memory = _opt(nv.memory, i) or {}
    cc = _opt(nv.compute_capability, i)
    mig = _opt(nv.mig_mode, i)
    numa = _opt(nv.numa_node, i)
    gpu = GPUFact(
        uuid=uuid,
        index=i,
        model=nv.name(i),
        memory_mib=memory["total"] // (1024 * 1024) if "total" in memory else None,
        pci_bus_id=bus,
        numa_node=numa if numa is not None and numa >= 0 else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        mig_mode=bool(mig) if mig is not None else None,
        mig_slices=_mig_slices(nv, i, memory.get("total"), problems) if mig else [],
        nvlinks=links,
        nvlink_domain=clique,
        **_telemetry(nv, i, memory),
    )
    for sid, switch in mine.items():
        switches.setdefault(sid, switch)
    return gpu


def _lost_gpu(
    nv: NvmlApi,
    i: int,
    uuid: str | None,
    bus: str | None,
    exc: NvmlError,
    known: GpuIdentities | None,
    host: str,
) -> GPUFact:
    """A GPU NVML cannot read, reported FAILED rather than left out.

    Left out, the service would delete it and the host would look smaller but healthy. Its uuid
    is the one NVML still gives, else the one an earlier collection saw (same PCI bus id, else
    same index), else ``GPU-lost-<host>-<index>``: the service then drops the old uuid and shows
    a failed GPU in its slot, which is the truth about the slot, instead of 7 healthy GPUs.
    """
    before = known.get(i, bus) if known is not None else None
    reasons = [f"NVML cannot read the GPU (NVML error {exc.code}: {exc}): reset or service it"]
    xids: list[int] = []
    with contextlib.suppress(NvmlError):
        xids = (nv.xid_errors(i) or [])[-MAX_XIDS:]
    _, reasons = xid_health(xids, Health.FAILED, reasons)
    return GPUFact(
        uuid=uuid or (before.uuid if before else f"{LOST_UUID_PREFIX}{host}-{i}"),
        index=i,
        model=before.model if before else "NVIDIA GPU",
        memory_mib=before.memory_mib if before else None,
        pci_bus_id=bus or (before.pci_bus_id if before else None),
        numa_node=before.numa_node if before else None,
        compute_capability=before.compute_capability if before else None,
        health=Health.FAILED,
        health_reasons=reasons[:32],
        xid_errors=xids,
    )


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


def read_metrics(nv: NvmlApi, *, known: GpuIdentities | None = None) -> list[GPUMetrics]:
    """Only what changes between full collections: cheap enough to run every few seconds.

    A GPU that cannot be read is sent as FAILED under the uuid NVML or `known` (the full
    collections) still gives, and skipped where neither does: metrics need a GPU to land on.
    """
    nv.init()
    try:
        out: list[GPUMetrics] = []
        for i in range(nv.device_count()):
            uuid: str | None = None
            try:
                uuid = nv.uuid(i)
                out.append(GPUMetrics(uuid=uuid, **_telemetry(nv, i, _opt(nv.memory, i) or {})))
            except NvmlError as exc:
                bus: str | None = None
                with contextlib.suppress(NvmlError):
                    bus = normalize_bus_id(nv.pci_bus_id(i))
                lost = _lost_gpu(nv, i, uuid, bus, exc, known, "")
                if not lost.uuid.startswith(LOST_UUID_PREFIX):
                    state = {name: getattr(lost, name) for name in GPUState.model_fields}
                    out.append(GPUMetrics(uuid=lost.uuid, **state))
        return out
    finally:
        with contextlib.suppress(NvmlError):
            nv.shutdown()
