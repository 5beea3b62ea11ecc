"""A thin, plain-data face over NVML, so that recorded answers replay through the same parsing code.

``RealNvml`` calls ``pynvml`` (the ``nvidia-ml-py`` package) and converts ctypes
structs to plain values; ``RecordingNvml`` wraps it and keeps every answer;
``ReplayNvml`` answers from such a recording. ``topo_collector.nvml`` turns any of
them into facts, so tests exercise the real parsing on real (or realistic) answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_NOT_FOUND = 6
# The GPU fell off the bus (after XID 79): every call about it fails until it is reset or serviced.
NVML_ERROR_GPU_IS_LOST = 15
NVLINK_MAX_LINKS = 36
NVLINK_REMOTE_GPU = 0
NVLINK_REMOTE_SWITCH = 2
# nvmlNvLinkErrorCounter_t
NVLINK_ERROR_DL_REPLAY = 0
NVLINK_ERROR_DL_RECOVERY = 1
NVLINK_ERROR_DL_CRC_FLIT = 2
NVLINK_ERROR_DL_CRC_DATA = 3

_T = TypeVar("_T")


class NvmlError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"NVML error {code}")
        self.code = code


class NvmlApi(Protocol):
    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def driver_version(self) -> str: ...
    def device_count(self) -> int: ...
    def uuid(self, i: int) -> str: ...
    def name(self, i: int) -> str: ...
    def memory(self, i: int) -> dict[str, int]: ...
    def pci_bus_id(self, i: int) -> str: ...
    def numa_node(self, i: int) -> int: ...
    def compute_capability(self, i: int) -> list[int]: ...
    def mig_mode(self, i: int) -> int: ...
    def temperature(self, i: int) -> int: ...
    def power_mw(self, i: int) -> int: ...
    def utilization(self, i: int) -> int: ...
    def ecc_uncorrected(self, i: int) -> int: ...
    def retired_pages(self, i: int) -> int: ...
    def remapped_rows(self, i: int) -> dict[str, int]: ...
    def nvlink_state(self, i: int, link: int) -> int: ...
    def nvlink_version(self, i: int, link: int) -> int: ...
    def nvlink_remote_pci(self, i: int, link: int) -> str: ...
    def nvlink_remote_type(self, i: int, link: int) -> int: ...
    def fabric_info(self, i: int) -> dict[str, Any]: ...
    def mig_device_count(self, i: int) -> int: ...
    def mig_device(self, i: int, j: int) -> dict[str, Any]: ...
    def nvlink_error_counter(self, i: int, link: int, counter: int) -> int: ...
    def xid_errors(self, i: int) -> list[int]: ...


METHODS = [name for name in NvmlApi.__dict__ if not name.startswith("_")]


class RealNvml:
    """Calls the NVIDIA driver through pynvml; every NVMLError becomes NvmlError(code)."""

    def __init__(self) -> None:
        import pynvml

        self._nv: Any = pynvml
        self._handles: dict[int, Any] = {}
        self._xid_set: Any = None  # the XID event set, created on the first xid_errors call
        self._xids: dict[int, list[int]] = {}

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            raise NvmlError(int(getattr(exc, "value", -1)), str(exc)) from None
        except (OSError, AttributeError) as exc:  # missing library or an old driver's missing symbol
            raise NvmlError(NVML_ERROR_LIBRARY_NOT_FOUND, str(exc)) from None

    def _h(self, i: int) -> Any:
        if i not in self._handles:
            self._handles[i] = self._call(self._nv.nvmlDeviceGetHandleByIndex, i)
        return self._handles[i]

    def init(self) -> None:
        self._call(self._nv.nvmlInit)

    def shutdown(self) -> None:
        self._handles.clear()
        self._call(self._nv.nvmlShutdown)

    def driver_version(self) -> str:
        return _text(self._call(self._nv.nvmlSystemGetDriverVersion))

    def device_count(self) -> int:
        return int(self._call(self._nv.nvmlDeviceGetCount))

    def uuid(self, i: int) -> str:
        return _text(self._call(self._nv.nvmlDeviceGetUUID, self._h(i)))

    def name(self, i: int) -> str:
        return _text(self._call(self._nv.nvmlDeviceGetName, self._h(i)))

    def memory(self, i: int) -> dict[str, int]:
        info = self._call(self._nv.nvmlDeviceGetMemoryInfo, self._h(i))
        return {"total": int(info.total), "used": int(info.used)}

    def pci_bus_id(self, i: int) -> str:
        return _text(self._call(self._nv.nvmlDeviceGetPciInfo, self._h(i)).busId)

    def numa_node(self, i: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetNumaNodeId, self._h(i)))

    def compute_capability(self, i: int) -> list[int]:
        major, minor = self._call(self._nv.nvmlDeviceGetCudaComputeCapability, self._h(i))
        return [int(major), int(minor)]

    def mig_mode(self, i: int) -> int:
        current, _pending = self._call(self._nv.nvmlDeviceGetMigMode, self._h(i))
        return int(current)

    def temperature(self, i: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetTemperature, self._h(i), self._nv.NVML_TEMPERATURE_GPU))

    def power_mw(self, i: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetPowerUsage, self._h(i)))

    def utilization(self, i: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetUtilizationRates, self._h(i)).gpu)

    def ecc_uncorrected(self, i: int) -> int:
        nv = self._nv
        return int(
            self._call(
                nv.nvmlDeviceGetTotalEccErrors,
                self._h(i),
                nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                nv.NVML_VOLATILE_ECC,
            )
        )

    def retired_pages(self, i: int) -> int:
        nv = self._nv
        pages = self._call(nv.nvmlDeviceGetRetiredPages, self._h(i), nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
        return len(pages)

    def remapped_rows(self, i: int) -> dict[str, int]:
        corr, unc, pending, failure = self._call(self._nv.nvmlDeviceGetRemappedRows, self._h(i))
        return {
            "correctable": int(corr),
            "uncorrectable": int(unc),
            "pending": int(pending),
            "failure": int(failure),
        }

    def nvlink_state(self, i: int, link: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetNvLinkState, self._h(i), link))

    def nvlink_version(self, i: int, link: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetNvLinkVersion, self._h(i), link))

    def nvlink_remote_pci(self, i: int, link: int) -> str:
        return _text(self._call(self._nv.nvmlDeviceGetNvLinkRemotePciInfo, self._h(i), link).busId)

    def nvlink_remote_type(self, i: int, link: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetNvLinkRemoteDeviceType, self._h(i), link))

    def fabric_info(self, i: int) -> dict[str, Any]:
        nv = self._nv
        info = nv.c_nvmlGpuFabricInfo_t()
        # By reference: pynvml hands the argument to C as given, and a struct passed by value
        # crashed the process (SIGSEGV) on a real H200 with driver 580.
        self._call(nv.nvmlDeviceGetGpuFabricInfo, self._h(i), ctypes.byref(info))
        return {
            "cluster_uuid": _uuid_from_bytes(bytes(info.clusterUuid)),
            "clique_id": int(info.cliqueId),
            "state": int(info.state),
            "status": int(info.status),
        }

    # ---- MIG (only asked of a GPU whose MIG mode is on) ----------------------------------

    def mig_device_count(self, i: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetMaxMigDeviceCount, self._h(i)))

    def mig_device(self, i: int, j: int) -> dict[str, Any]:
        """MIG device `j` of GPU `i` (NOT_FOUND where that index holds no instance): its uuid, its
        GPU instance id, and the slices and memory of its GPU instance profile (device attributes)."""
        nv = self._nv
        handle = self._call(nv.nvmlDeviceGetMigDeviceHandleByIndex, self._h(i), j)
        attributes = self._call(nv.nvmlDeviceGetAttributes, handle)
        memory = self._call(nv.nvmlDeviceGetMemoryInfo, handle)
        return {
            "uuid": _text(self._call(nv.nvmlDeviceGetUUID, handle)),
            "gpu_instance_id": int(self._call(nv.nvmlDeviceGetGpuInstanceId, handle)),
            "slices": int(attributes.gpuInstanceSliceCount),
            "profile_memory_mib": int(attributes.memorySizeMB),
            "memory_total": int(memory.total),
        }

    # ---- error counters and XIDs (#17) --------------------------------------------------

    def nvlink_error_counter(self, i: int, link: int, counter: int) -> int:
        """One of NVML's per-link error counters (NVLINK_ERROR_*), cumulative since the driver loaded."""
        return int(self._call(self._nv.nvmlDeviceGetNvLinkErrorCounter, self._h(i), link, counter))

    def xid_errors(self, i: int) -> list[int]:
        """Critical XIDs seen on device i since this object first watched (distinct, oldest first).

        NVML reports XIDs only as events, so a one-shot read would miss every XID between two
        collections. The first call registers every device for XidCriticalError events on one
        event set, holding its own NVML reference (nvmlInit is counted, so the collection's
        shutdown does not close it); each call drains what is pending without waiting. The
        record is sticky for the collector's life: a GPU that raised XID 79 stays marked until
        the collector restarts (after the repair or reset).
        """
        nv = self._nv
        if self._xid_set is None:
            self._call(nv.nvmlInit)
            events = self._call(nv.nvmlEventSetCreate)
            for d in range(int(self._call(nv.nvmlDeviceGetCount))):
                with contextlib.suppress(NvmlError):  # a GPU that cannot report events reports none
                    self._call(nv.nvmlDeviceRegisterEvents, self._h(d), nv.nvmlEventTypeXidCriticalError, events)
            self._xid_set = events
        while True:
            try:
                event = self._call(nv.nvmlEventSetWait_v2, self._xid_set, 0)
            except NvmlError:
                break  # NVML_ERROR_TIMEOUT: nothing pending
            index = int(self._call(nv.nvmlDeviceGetIndex, event.device))
            seen = self._xids.setdefault(index, [])
            code = int(event.eventData)
            if code not in seen:
                seen.append(code)
        return list(self._xids.get(i, []))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _uuid_from_bytes(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _key(method: str, args: tuple[Any, ...]) -> str:
    return f"{method}({','.join(str(a) for a in args)})"


class RecordingNvml:
    """Wraps an NvmlApi and keeps every answer (or error code), to be saved as a fixture."""

    def __init__(self, inner: NvmlApi) -> None:
        self.inner = inner
        self.calls: dict[str, Any] = {}

    def __getattr__(self, method: str) -> Callable[..., Any]:
        fn = getattr(self.inner, method)

        def call(*args: Any) -> Any:
            try:
                value = fn(*args)
            except NvmlError as exc:
                self.calls[_key(method, args)] = {"nvml_error": exc.code}
                raise
            self.calls[_key(method, args)] = value
            return value

        return call

    def save(self, path: Path, meta: dict[str, Any]) -> None:
        path.write_text(json.dumps({"meta": meta, "calls": self.calls}, indent=1, sort_keys=True))


class ReplayNvml:
    """Answers NVML calls from a recording; a call it lacks is NOT_SUPPORTED, as on an older driver."""

    def __init__(self, calls: dict[str, Any]) -> None:
        self.calls = calls

    @classmethod
    def load(cls, path: Path) -> ReplayNvml:
        return cls(json.loads(path.read_text())["calls"])

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in METHODS:
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            key = _key(method, args)
            if key not in self.calls:
                if method in ("init", "shutdown"):
                    return None
                raise NvmlError(NVML_ERROR_NOT_SUPPORTED, f"{key} not in recording")
            value = self.calls[key]
            if isinstance(value, dict) and "nvml_error" in value:
                raise NvmlError(int(value["nvml_error"]))
            return value

        return call
