"""Topology text as it reaches us: through Windows, terminals, loggers, older drivers, or cut short.

The same real matrix (`fixtures/topology/h100-8gpu.nvidia-smi-topo-m.txt`) in each spelling must
import to the same facts, or be refused with a clear error; never import as a different host.
Before these fixes ``\\r\\r\\n`` line ends imported 8 GPUs of which 7 had no NVLinks and no NUMA
node (the extra ``\\r`` became a blank line, which ends the matrix).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from topo_collector.importers import ImportOptions, detect_format, import_file, import_hosts, parse_smi_topo
from topo_facts import HostFacts, NICFact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"
# The model named, so that a test of other warnings sees no "GPU model not identified" one.
NAMED = ImportOptions(host="h", gpu_model="NVIDIA H100 80GB HBM3")
CLEAN = (FIXTURES / "h100-8gpu.nvidia-smi-topo-m.txt").read_text()
OPTS = ImportOptions(host="h", gpu_model="H100-SXM")


def shape(facts: HostFacts) -> list[tuple[int, int | None, int]]:
    """Per GPU: index, NUMA node, NVLink lanes in all."""
    return [(g.index, g.numa_node, sum(link.links for link in g.nvlinks)) for g in facts.gpus]


EXPECTED = shape(parse_smi_topo(CLEAN, OPTS))


def _underline_header(text: str, on: str, off: str) -> str:
    lines = text.split("\n")
    lines[1] = on + lines[1] + off
    return "\n".join(lines)


SPELLINGS: dict[str, Callable[[str], str]] = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "cr-cr-lf (a CRLF file through a text-mode copy)": lambda t: t.replace("\n", "\r\r\n"),
    "utf-8 byte-order mark before the header": lambda t: "\ufeff" + t.split("\n", 1)[1],
    "sgr underline, as nvidia-smi 580 writes it": lambda t: _underline_header(t, "\x1b[4m", "\x1b[0m"),
    "tput sgr0's charset shift ESC(B": lambda t: _underline_header(t, "\x1b(B\x1b[4m", "\x1b(B\x1b[m"),
    "colon-form colour": lambda t: _underline_header(t, "\x1b[38:5:208m", "\x1b[39m"),
    "an OSC window title": lambda t: "\x1b]0;nvidia-smi\x07" + t,
    "tabs between the cells": lambda t: t.replace("  ", "\t"),
}


@pytest.mark.parametrize("spell", SPELLINGS.values(), ids=list(SPELLINGS))
def test_every_spelling_imports_as_the_clean_matrix(spell: Callable[[str], str]) -> None:
    text = spell(CLEAN)
    assert detect_format(text) == "nvidia-smi-topo"
    assert shape(parse_smi_topo(text, OPTS)) == EXPECTED


@pytest.mark.parametrize(
    ("encoding", "bom"), [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-8", b"\xef\xbb\xbf")]
)
def test_a_file_with_a_byte_order_mark_imports(tmp_path: Path, encoding: str, bom: bytes) -> None:
    """Windows PowerShell's `>` writes UTF-16 with a mark; Notepad writes UTF-8 with one."""
    path = tmp_path / "topo.txt"
    path.write_bytes(bom + CLEAN.replace("\n", "\r\n").encode(encoding))
    assert shape(import_file(path, OPTS)) == EXPECTED


def test_a_header_gpu_without_a_row_is_refused() -> None:
    cut = "\n".join(line for line in CLEAN.split("\n") if not line.startswith("GPU5 "))
    with pytest.raises(ValueError, match="names GPU5 but its row is missing"):
        parse_smi_topo(cut, OPTS)


def test_a_row_cut_short_is_refused() -> None:
    lines = CLEAN.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("GPU7 "))
    lines[row] = lines[row][:20]  # GPU7, three cells, then the capture ends
    with pytest.raises(ValueError, match=r"names GPU7 but its row has 3 of 10 cells \(cut short"):
        parse_smi_topo("\n".join(lines[: row + 1]), OPTS)


# Older drivers name a NIC's column by the device itself (no `NIC<n>` and no legend). Written for
# these tests in the layout of published output; the NIC is two hops from GPU0/1 and on GPU2/3's
# host bridge.
OLD_DRIVER = """\
        GPU0    GPU1    GPU2    GPU3    {nic}  CPU Affinity    NUMA Affinity
GPU0     X      PIX     SYS     SYS     SYS     0-11    0
GPU1    PIX      X      SYS     SYS     SYS     0-11    0
GPU2    SYS     SYS      X      PIX     PHB     12-23   1
GPU3    SYS     SYS     PIX      X      PHB     12-23   1
{nic}  SYS     SYS     PHB     PHB      X

Legend:
"""


@pytest.mark.parametrize("nic", ["mlx5_0", "mlx4_0", "bnxt_re0", "mlx5_bond_0"])
def test_an_old_driver_names_the_nic_column_by_its_device(nic: str) -> None:
    """Before, only `mlx5_<n>` counted as a column: with `mlx4_0` every row shifted by one cell, so
    every GPU lost its NUMA node and the NIC vanished, silently."""
    facts = parse_smi_topo(OLD_DRIVER.format(nic=nic), ImportOptions(host="h"))
    assert [(g.index, g.numa_node) for g in facts.gpus] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert [n.name for n in facts.nics] == [nic]
    assert [a.via for a in facts.gpu_nic_affinity] == ["host", "host", "numa", "numa"]
    assert [(n.index, n.cpus) for n in facts.numa_nodes] == [(0, "0-11"), (1, "12-23")]


def test_two_cells_run_together_are_refused() -> None:
    """A garbled capture (`PIXNODE`) had the CPU list fill the missing cell: GPU5 imported with no
    node and the wrong NIC. A row needs a cell per device and per trailing heading."""
    text = OLD_DRIVER.format(nic="mlx5_0").replace("PIX     SYS     SYS     SYS", "PIXSYS     SYS     SYS", 1)
    with pytest.raises(ValueError, match=r"GPU0 but its row has 6 of 7 cells \(cut short, or two cells run"):
        parse_smi_topo(text, ImportOptions(host="h"))


def test_an_unknown_cell_is_refused() -> None:
    text = OLD_DRIVER.format(nic="mlx5_0").replace("PIX     SYS     SYS     SYS", "PIX     SIS     SYS     SYS", 1)
    with pytest.raises(ValueError, match=r"GPU0's row is garbled \('SIS' is no topo -m cell\)"):
        parse_smi_topo(text, ImportOptions(host="h"))


def test_a_capture_cut_in_the_last_rows_affinity_is_refused() -> None:
    """Cut right after GPU7's own `X`: the matrix is whole but its CPU and NUMA cells are not."""
    cut = CLEAN[: CLEAN.index("X", CLEAN.index("\nGPU7")) + 1]
    with pytest.raises(ValueError, match=r"GPU7 but its row has 8 of 10 cells"):
        parse_smi_topo(cut, OPTS)


def test_trailing_nul_bytes_are_ignored() -> None:
    assert shape(parse_smi_topo(CLEAN.rstrip("\n") + "\x00" * 64, OPTS)) == EXPECTED


@pytest.mark.parametrize(
    ("spell", "name"),
    [
        (lambda t: t.replace("\n", "\r"), "old Mac line ends (CR alone)"),
        (lambda t: "\n".join(line.lstrip() for line in t.split("\n")), "every line stripped"),
    ],
)
def test_more_spellings(spell: Callable[[str], str], name: str) -> None:
    assert shape(parse_smi_topo(spell(CLEAN), OPTS)) == EXPECTED, name


TWO_NICS = """\
\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPIX\tSYS\t0-47\t0\t\tN/A
GPU1\tNV18\t X \tSYS\tPIX\t48-95\t1\t\tN/A
NIC0\tPIX\tSYS\t X \tSYS
NIC1\tSYS\tPIX\tSYS\t X

Legend:

  X    = Self

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
"""


def test_the_nic_legend_names_the_nics() -> None:
    warnings: list[str] = []
    facts = parse_smi_topo(TWO_NICS, NAMED, warnings=warnings)
    assert [(a.nic, a.via) for a in facts.gpu_nic_affinity] == [("mlx5_0", "pcie-switch"), ("mlx5_1", "pcie-switch")]
    assert warnings == []


def test_a_legend_cut_before_its_last_nics_is_refused() -> None:
    with pytest.raises(ValueError, match=r"the NIC legend names 1 of 2 NICs \(not NIC1\): is the file cut\?"):
        parse_smi_topo(TWO_NICS.replace("  NIC1: mlx5_1\n", ""), ImportOptions(host="h"))


def test_a_legend_naming_one_nic_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"names mlx5_0 twice: is the file cut\?"):
        parse_smi_topo(TWO_NICS.replace("NIC1: mlx5_1", "NIC1: mlx5_0"), ImportOptions(host="h"))


def test_without_a_legend_the_nics_keep_their_column_names_and_it_says_so() -> None:
    warnings: list[str] = []
    facts = parse_smi_topo(TWO_NICS.split("Legend")[0], NAMED, warnings=warnings)
    assert [n.name for n in facts.nics] == ["NIC0", "NIC1"]
    assert warnings == ["no NIC legend: 2 NIC(s) keep their column names (NIC0, ...), not the host's NIC names"]


def test_a_file_ending_inside_the_legend_warns_that_the_last_name_may_be_cut() -> None:
    warnings: list[str] = []
    parse_smi_topo(TWO_NICS.rstrip("\n")[:-2], NAMED, warnings=warnings)
    assert warnings == ["the file ends inside the NIC legend: NIC1's name 'mlx5' may be cut"]


def test_a_numa_node_whose_cpus_are_unknown_is_still_a_node() -> None:
    facts = parse_smi_topo(TWO_NICS.replace("0-47", "N/A").replace("48-95", "N/A"), ImportOptions(host="h"))
    assert [(g.index, g.numa_node) for g in facts.gpus] == [(0, 0), (1, 1)]
    assert [(n.index, n.cpus) for n in facts.numa_nodes] == [(0, None), (1, None)]


def test_the_cli_prints_the_legend_warning(tmp_path: Path) -> None:
    path = tmp_path / "topo.txt"
    path.write_text(TWO_NICS.split("Legend")[0])
    assert import_hosts(path, NAMED).warnings == [
        "h: no NIC legend: 2 NIC(s) keep their column names (NIC0, ...), not the host's NIC names"
    ]


def test_rocm_smi_cut_inside_its_numa_table_is_refused(tmp_path: Path) -> None:
    text = (FIXTURES / "mi300x-like.rocm-smi-showtopo.txt").read_text()
    path = tmp_path / "cut.txt"
    # Cut, then the end line added back (as a log that kept the last line would): the table itself
    # still says it lost GPUs.
    path.write_text(text[: text.index("GPU[4]\t\t: (Topology) Numa Node")] + text[text.index("=== End of ROCm") - 40 :])
    with pytest.raises(ValueError, match=r"Numa Nodes table lists 4 of 8 GPUs \(not GPU\[4\], GPU\[5\], GPU\["):
        import_file(path, ImportOptions(host="h", gpu_model="AMD Instinct MI300X"))


def test_hwloc_without_its_nvlink_matrix_says_the_gpus_import_as_pcie_only(tmp_path: Path) -> None:
    """hwloc built without NVML, or one that cannot read NVLink 5 (B200/GB200), writes no matrix."""
    text = (FIXTURES / "dgx2.hwloc.xml").read_text()
    start = text.index("<distances2hetero")
    end = text.rindex("</distances2hetero>") + len("</distances2hetero>")
    path = tmp_path / "dgx2.xml"
    path.write_text(text[:start] + text[end:])
    result = import_hosts(path, ImportOptions(host="h"))
    assert all(g.nvlinks == [] for g in result.hosts[0].gpus)
    assert result.warnings == [
        "h: no NVLinkBandwidth matrix (hwloc without NVML, or an NVLink version it cannot read): "
        "the GPUs import as PCIe-only"
    ]
    assert import_hosts(FIXTURES / "dgx2.hwloc.xml", ImportOptions(host="h")).warnings == []


def test_inconsistent_facts_are_one_line_not_a_pydantic_dump() -> None:
    with pytest.raises(ValueError, match=r"^h: the file's facts are inconsistent: nics\[1\]\.name: duplicate 'a'$"):
        ImportOptions(host="h").host_facts(nics=[NICFact(name="a"), NICFact(name="a")])


def test_a_file_cut_between_the_cell_legend_and_the_nic_legend_is_refused() -> None:
    with pytest.raises(ValueError, match=r"has the cell legend but no NIC legend: is the file cut\?"):
        parse_smi_topo(TWO_NICS.split("NIC Legend")[0] + "NIC Leg", ImportOptions(host="h"))


def test_rocm_smi_cut_before_its_numa_table_is_refused(tmp_path: Path) -> None:
    text = (FIXTURES / "mi300x-like.rocm-smi-showtopo.txt").read_text()
    path = tmp_path / "cut.txt"
    path.write_text(text[: text.index("=== Numa Nodes")])
    with pytest.raises(ValueError, match=r"no 'End of ROCm SMI Log' line: is it truncated\?"):
        import_file(path, ImportOptions(host="h", gpu_model="AMD Instinct MI300X"))


def test_a_capture_cut_in_the_nic_rows_is_refused() -> None:
    with pytest.raises(ValueError, match=r"the header names NIC1 but its row is missing"):
        parse_smi_topo(TWO_NICS.split("NIC1\tSYS")[0], ImportOptions(host="h"))


def test_a_missing_gpu_model_is_warned_as_the_nccl_importer_does() -> None:
    text = (FIXTURES / "h100-8gpu.nvidia-smi-topo-m.txt").read_text()
    warnings: list[str] = []
    facts = parse_smi_topo(text, ImportOptions(host="h"), warnings=warnings)
    assert {g.model for g in facts.gpus} == {"NVIDIA GPU"}
    assert [w for w in warnings if "GPU model not identified" in w and "--gpu-model" in w]
    named: list[str] = []
    parse_smi_topo(text, ImportOptions(host="h", gpu_model="NVIDIA H100 80GB HBM3"), warnings=named)
    assert not [w for w in named if "GPU model" in w]
