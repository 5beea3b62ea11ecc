"""A little Cypher text analysis for the query-signature test: RETURN columns, write clauses.

Not a parser: enough to find top-level keywords outside strings and brackets in the
subset of Cypher `queries/` uses (both stores'), which the lint test pins down anyway.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"//[^\n]*")
_WRITE_CLAUSE = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE)\b")
_ALIAS = re.compile(r"\bAS\s+([A-Za-z_][A-Za-z0-9_]*)\s*$", re.IGNORECASE)


def _mask(text: str) -> str:
    """The text with string literals and bracketed parts blanked out (same length)."""
    out, depth, quote = [], 0, ""
    for ch in text:
        if quote:
            out.append(" ")
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
            out.append(" ")
        elif ch in "([{":
            depth += 1
            out.append(" ")
        elif ch in ")]}":
            depth -= 1
            out.append(" ")
        else:
            out.append(" " if depth else ch)
    return "".join(out)


def _split_commas(text: str) -> list[str]:
    masked = _mask(text)
    parts, start = [], 0
    for i, ch in enumerate(masked):
        if ch == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def statement(text: str) -> str:
    return _COMMENT.sub("", text)


def writes(text: str) -> bool:
    """Whether the statement has a write clause (outside strings; inside FOREACH counts)."""
    body = statement(text)
    blanked = re.sub(r"'[^']*'|\"[^\"]*\"", "''", body)
    return bool(_WRITE_CLAUSE.search(blanked.upper()))


def return_columns(text: str) -> list[str] | None:
    """The columns of the final RETURN (of each UNION part, which must agree); None if no RETURN."""
    body = statement(text)
    masked = _mask(body)
    bounds = [0] + [m.end() for m in re.finditer(r"\bUNION(\s+ALL)?\b", masked, re.IGNORECASE)]
    ends = [m.start() for m in re.finditer(r"\bUNION(\s+ALL)?\b", masked, re.IGNORECASE)] + [len(body)]
    found: list[list[str]] = []
    for start, end in zip(bounds, ends, strict=True):
        part, mpart = body[start:end], masked[start:end]
        returns = list(re.finditer(r"\bRETURN\b(\s+DISTINCT\b)?", mpart, re.IGNORECASE))
        if not returns:
            continue
        head = returns[-1].end()
        tail = re.search(r"\b(ORDER\s+BY|SKIP|LIMIT)\b", mpart[head:], re.IGNORECASE)
        items = part[head : head + tail.start()] if tail else part[head:]
        found.append([_column(item) for item in _split_commas(items)])
    if not found:
        return None
    if any(cols != found[0] for cols in found):
        raise ValueError(f"UNION parts return different columns: {found}")
    return found[0]


def _column(item: str) -> str:
    m = _ALIAS.search(item)
    return m.group(1) if m else item.strip()
