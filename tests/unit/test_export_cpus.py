"""Core numbers for gres.conf from NUMA CPU lists, and the gres.conf / NodeName lines: table tests."""

from __future__ import annotations

import pytest

from graphsvc.exports.cpus import core_layout, format_cpulist, parse_cpulist
from graphsvc.exports.kubernetes import fnv64a, label_value
from graphsvc.exports.slurm import GpuHardware, HostHardware, gres_device_file, gres_type, node_line, render_gres


@pytest.mark.parametrize(
    ("text", "values"),
    [("", []), (None, []), ("0", [0]), ("0-3,8", [0, 1, 2, 3, 8]), ("3,1-2", [1, 2, 3]), ("0-1,1-2", [0, 1, 2])],
)
def test_parse_cpulist(text: str | None, values: list[int]) -> None:
    assert parse_cpulist(text) == values


@pytest.mark.parametrize(
    ("values", "text"), [([], ""), ([5], "5"), ([0, 1, 2, 3, 8], "0-3,8"), ([3, 1, 2, 9, 10], "1-3,9-10")]
)
def test_format_cpulist(values: list[int], text: str) -> None:
    assert format_cpulist(values) == text


@pytest.mark.parametrize(
    ("numa", "threads", "sockets", "per_socket", "cores"),
    [
        # DGX H100: 2 x 56 cores, SMT2, Linux numbers first threads 0-111, siblings +112
        ({0: "0-55,112-167", 1: "56-111,168-223"}, 2, 2, 56, {0: "0-55", 1: "56-111"}),
        # GB200 tray: 2 Grace, no SMT
        ({0: "0-71", 1: "72-143"}, 1, 2, 72, {0: "0-71", 1: "72-143"}),
        # one socket with SMT2 looks like one run: no SMT can be read, thread ids stay
        ({0: "0-127"}, 1, 1, 128, {0: "0-127"}),
        # SMT4 (POWER-style numbering kept core-first)
        ({0: "0-3,8-11,16-19,24-27", 1: "4-7,12-15,20-23,28-31"}, 4, 2, 4, {0: "0-3", 1: "4-7"}),
        # sockets interleaved (even CPUs on node 0): cores numbered socket by socket, as hwloc does
        ({0: "0,2,4,6", 1: "1,3,5,7"}, 1, 2, 4, {0: "0-3", 1: "4-7"}),
        # uneven nodes: no single CoresPerSocket
        ({0: "0-7", 1: "8-11"}, 1, 2, 0, {0: "0-7", 1: "8-11"}),
        # a memory-only NUMA node (CXL, HBM) holds no cores
        ({0: "0-7", 1: "8-15", 2: None}, 1, 2, 8, {0: "0-7", 1: "8-15"}),
    ],
)
def test_core_layout(
    numa: dict[int, str | None], threads: int, sockets: int, per_socket: int, cores: dict[int, str]
) -> None:
    lay = core_layout(numa)
    assert (lay.threads_per_core, lay.sockets, lay.cores_per_socket) == (threads, sockets, per_socket)
    assert {n: lay.cores_of(n) for n in lay.cores} == cores
    assert lay.cores_of(None) is None and lay.cores_of(9) is None


@pytest.mark.parametrize(
    ("model", "index", "path", "gres"),
    [
        ("NVIDIA H100 80GB HBM3", 3, "/dev/nvidia3", "h100-80gb-hbm3"),
        ("NVIDIA GB200", 0, "/dev/nvidia0", "gb200"),
        ("AMD Instinct MI300X", 0, "/dev/dri/renderD128", "mi300x"),
        ("AMD Instinct MI250X", 7, "/dev/dri/renderD135", "mi250x"),
        ("Tesla V100-SXM2-32GB", 1, "/dev/nvidia1", "tesla-v100-sxm2-32gb"),
    ],
)
def test_device_files_and_types(model: str, index: int, path: str, gres: str) -> None:
    assert gres_device_file(model, index) == path
    assert gres_type(model) == gres


def test_gres_and_node_lines_for_an_smt_host() -> None:
    host = HostHardware(
        name="h1",
        gpus=[GpuHardware(0, "NVIDIA H100 80GB HBM3", 0), GpuHardware(1, "NVIDIA H100 80GB HBM3", 1)],
        lanes={(0, 1): 18, (1, 0): 18},
        numa_cpus={0: "0-55,112-167", 1: "56-111,168-223"},
        memory_mib=2_062_000,
    )
    lines = render_gres("c", [host]).splitlines()[1:]
    assert lines == [
        "NodeName=h1 Name=gpu Type=h100-80gb-hbm3 File=/dev/nvidia0 Links=-1,18 Cores=0-55",
        "NodeName=h1 Name=gpu Type=h100-80gb-hbm3 File=/dev/nvidia1 Links=18,-1 Cores=56-111",
    ]
    assert node_line(host) == (
        "NodeName=h1 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2062000 Gres=gpu:h100-80gb-hbm3:2"
    )


def test_amd_host_gres() -> None:
    host = HostHardware("m1", [GpuHardware(i, "AMD Instinct MI300X", i // 4) for i in range(8)], {},
                        {0: "0-95", 1: "96-191"})  # fmt: skip
    lines = render_gres("c", [host]).splitlines()[1:]
    assert lines[0] == "NodeName=m1 Name=gpu Type=mi300x File=/dev/dri/renderD128 Links=-1,0,0,0,0,0,0,0 Cores=0-95"
    assert lines[7].endswith("File=/dev/dri/renderD135 Links=0,0,0,0,0,0,0,-1 Cores=96-191")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("leafgroup-a100-leaf0", "leafgroup-a100-leaf0"),
        ("default/gb200-rack01/clique-0", "default-gb200-rack01-clique-0"),
        ("x" * 63, "x" * 63),
        ("x" * 64, "x" + format(fnv64a("x" * 64), "016x")),  # longer than 63: Topograph's FNV-64a form
    ],
)
def test_topograph_label_values(text: str, value: str) -> None:
    assert label_value(text) == value


def test_fnv64a_reference_vectors() -> None:
    assert fnv64a("") == 0xCBF29CE484222325 and fnv64a("a") == 0xAF63DC4C8601EC8C
