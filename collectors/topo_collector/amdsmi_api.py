"""A thin, plain-data face over AMD SMI (the ``amdsmi`` Python package), recordable and replayable.

Mirrors ``nvml_api``: ``RealAmdSmi`` calls ``amdsmi`` where it is installed (ROCm hosts ship
it; it is not a dependency of this package), ``RecordingAmdSmi`` keeps every answer and
``ReplayAmdSmi`` answers from such a recording, so tests run the real parsing in
``topo_collector.amd`` on recorded answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

AMDSMI_NOT_SUPPORTED = 2
AMDSMI_NOT_INSTALLED = -1
# amdsmi.AmdSmiIoLinkType values as amdsmi_topo_get_link_type reports them.
LINK_TYPE_PCIE = 1
LINK_TYPE_XGMI = 2

_T = TypeVar("_T")


class AmdSmiError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"AMD SMI error {code}")
        self.code = code


class AmdSmiApi(Protocol):
    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def processor_count(self) -> int: ...
    def bdf(self, i: int) -> str: ...
    def uuid(self, i: int) -> str: ...
    def asic_info(self, i: int) -> dict[str, Any]: ...
    def vram_total_mib(self, i: int) -> int: ...
    def numa_node(self, i: int) -> int: ...
    def link_type(self, i: int, j: int) -> dict[str, int]: ...
    def max_bandwidth_mbps(self, i: int, j: int) -> int: ...


METHODS = [name for name in AmdSmiApi.__dict__ if not name.startswith("_")]


class RealAmdSmi:
    """Calls amdsmi; every AmdSmiException becomes AmdSmiError, a missing package AMDSMI_NOT_INSTALLED."""

    def __init__(self) -> None:
        try:
            import amdsmi  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise AmdSmiError(AMDSMI_NOT_INSTALLED, f"the amdsmi package is not installed ({exc})") from None
        self._a: Any = amdsmi
        self._handles: list[Any] = []

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return fn(*args)
        except self._a.AmdSmiException as exc:
            raise AmdSmiError(int(getattr(exc, "err_code", -2)), str(exc)) from None
        except (OSError, AttributeError) as exc:
            raise AmdSmiError(AMDSMI_NOT_INSTALLED, str(exc)) from None

    def init(self) -> None:
        self._call(self._a.amdsmi_init)
        self._handles = list(self._call(self._a.amdsmi_get_processor_handles))

    def shutdown(self) -> None:
        self._handles = []
        self._call(self._a.amdsmi_shut_down)

    def processor_count(self) -> int:
        return len(self._handles)

    def bdf(self, i: int) -> str:
        return str(self._call(self._a.amdsmi_get_gpu_device_bdf, self._handles[i]))

    def uuid(self, i: int) -> str:
        return str(self._call(self._a.amdsmi_get_gpu_device_uuid, self._handles[i]))

    def asic_info(self, i: int) -> dict[str, Any]:
        info = self._call(self._a.amdsmi_get_gpu_asic_info, self._handles[i])
        keep = ("market_name", "vendor_id", "device_id", "subvendor_id", "subsystem_id", "target_graphics_version")
        return {k: (v if isinstance(v, (int, str)) else str(v)) for k, v in dict(info).items() if k in keep}

    def vram_total_mib(self, i: int) -> int:
        usage = self._call(self._a.amdsmi_get_gpu_vram_usage, self._handles[i])
        return int(dict(usage)["vram_total"])

    def numa_node(self, i: int) -> int:
        return int(self._call(self._a.amdsmi_topo_get_numa_node_number, self._handles[i]))

    def link_type(self, i: int, j: int) -> dict[str, int]:
        got = dict(self._call(self._a.amdsmi_topo_get_link_type, self._handles[i], self._handles[j]))
        return {"hops": int(got.get("hops", 0)), "type": int(got.get("type", 0))}

    def max_bandwidth_mbps(self, i: int, j: int) -> int:
        got = self._call(self._a.amdsmi_get_minmax_bandwidth_between_processors, self._handles[i], self._handles[j])
        return int(dict(got)["max_bandwidth"])


def _key(method: str, args: tuple[Any, ...]) -> str:
    return f"{method}({','.join(str(a) for a in args)})"


class RecordingAmdSmi:
    """Wraps an AmdSmiApi and keeps every answer (or error code), to be saved as a fixture."""

    def __init__(self, inner: AmdSmiApi) -> None:
        self.inner = inner
        self.calls: dict[str, Any] = {}

    def __getattr__(self, method: str) -> Callable[..., Any]:
        fn = getattr(self.inner, method)

        def call(*args: Any) -> Any:
            try:
                value = fn(*args)
            except AmdSmiError as exc:
                self.calls[_key(method, args)] = {"amdsmi_error": exc.code}
                raise
            self.calls[_key(method, args)] = value
            return value

        return call

    def save(self, path: Path, meta: dict[str, Any]) -> None:
        path.write_text(json.dumps({"meta": meta, "calls": self.calls}, indent=1, sort_keys=True))


class ReplayAmdSmi:
    """Answers from a recording; a call it lacks is NOT_SUPPORTED, as on an older ROCm."""

    def __init__(self, calls: dict[str, Any]) -> None:
        self.calls = calls

    @classmethod
    def load(cls, path: Path) -> ReplayAmdSmi:
        return cls(json.loads(path.read_text())["calls"])

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in METHODS:
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            key = _key(method, args)
            if key not in self.calls:
                if method in ("init", "shutdown"):
                    return None
                raise AmdSmiError(AMDSMI_NOT_SUPPORTED, f"{key} not in recording")
            value = self.calls[key]
            if isinstance(value, dict) and "amdsmi_error" in value:
                raise AmdSmiError(int(value["amdsmi_error"]))
            return value

        return call
