"""`nvidia-smi topo -m` as it reaches us: through Windows, terminals, loggers, or cut short.

The same real matrix (`fixtures/topology/h100-8gpu.nvidia-smi-topo-m.txt`) in each spelling must
import to the same facts, or be refused with a clear error; never import as a different host.
Before these fixes ``\\r\\r\\n`` line ends imported 8 GPUs of which 7 had no NVLinks and no NUMA
node (the extra ``\\r`` became a blank line, which ends the matrix).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from topo_collector.importers import ImportOptions, detect_format, import_file, parse_smi_topo
from topo_facts import HostFacts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"
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
    with pytest.raises(ValueError, match=r"names GPU7 but its row is cut short \(3 of 8 cells\)"):
        parse_smi_topo("\n".join(lines[: row + 1]), OPTS)
