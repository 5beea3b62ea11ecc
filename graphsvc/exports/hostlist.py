"""Slurm hostlist expressions: ``gpu[001-032,040]`` both ways.

`expand_hostlist` reads what admins and ``scontrol`` write; `compress_hostlist` writes the
same compact form into graphsvc's Slurm exports (as ``scontrol show hostlist`` would), so a
leaf group of a thousand hosts stays one short line.
"""

from __future__ import annotations

import re
from collections import defaultdict


class HostlistError(ValueError):
    """Not a hostlist expression."""


def expand_hostlist(text: str) -> list[str]:
    """Slurm's hostlist expressions: ``a[01-03,7],b`` -> ``a01 a02 a03 a7 b`` (zero padding kept)."""
    out: list[str] = []
    for item in _split_top(text.strip()):
        if not item:
            continue
        out.extend(_expand_one(item))
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {text!r}")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise HostlistError(f"unbalanced '[' in hostlist {text!r}")
    parts.append(cur)
    return [p.strip() for p in parts]


def _expand_one(item: str) -> list[str]:
    m = re.search(r"\[([^\[\]]*)\]", item)
    if not m:
        return [item]
    head, tail = item[: m.start()], item[m.end() :]
    values: list[str] = []
    for part in m.group(1).split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise HostlistError(f"bad range {part!r} in hostlist {item!r}")
        if not dash:
            values.append(lo)
            continue
        if int(hi) < int(lo) or int(hi) - int(lo) > 100_000:
            raise HostlistError(f"bad range {part!r} in hostlist {item!r}")
        width = len(lo) if lo.startswith("0") else 0
        values += [str(v).zfill(width) for v in range(int(lo), int(hi) + 1)]
    return [name for v in values for name in _expand_one(head + v + tail)]


def compress_hostlist(names: list[str]) -> str:
    """``n01 n02 n03 n07 x`` -> ``n[01-03,07],x``: names sharing a prefix and digit width fold
    into ranges; names without trailing digits stay as they are. `expand_hostlist` inverts it
    (as a set: order is by prefix, then number)."""
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    plain: list[str] = []
    for name in sorted(set(names)):
        m = re.match(r"^(.*?)(\d+)$", name)
        if m is None or "[" in name or "]" in name or "," in name:
            plain.append(name)
        else:
            groups[(m.group(1), len(m.group(2)))].append(int(m.group(2)))
    out: list[str] = []
    for (prefix, width), numbers in sorted(groups.items()):
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        runs: list[str] = []
        ordered = sorted(numbers)
        i = 0
        while i < len(ordered):
            j = i
            while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
                j += 1
            lo, hi = f"{ordered[i]:0{width}d}", f"{ordered[j]:0{width}d}"
            runs.append(lo if i == j else f"{lo}-{hi}")
            i = j + 1
        out.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(out + plain)
