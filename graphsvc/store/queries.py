"""Named Cypher queries, one ``.cypher`` file each under ``queries/``.

A query's name is its path below ``queries/`` without the extension
(``ingest_host``, ``migrations/0002_1_gpu_state_default``). Files under ``queries/fragments/``
are not queries: a line ``//@include NAME`` in a query is replaced by that fragment, so a
statement tail shared by several writes (the counter recount) is written once. Code refers to
queries only by name and passes values only as ``$parameters``; nothing
is ever spliced into query text, so a hostile string can only be stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from graphsvc.resources import resource_dir

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_LINE_COMMENT = re.compile(r"//[^\n]*")


@dataclass(frozen=True)
class NamedQuery:
    name: str
    text: str
    path: Path

    @property
    def parameters(self) -> frozenset[str]:
        return frozenset(_PARAM.findall(_LINE_COMMENT.sub("", self.text)))

    @property
    def writes(self) -> bool:
        body = _LINE_COMMENT.sub("", self.text).upper()
        return any(re.search(rf"\b{word}\b", body) for word in ("CREATE", "MERGE", "SET", "DELETE", "REMOVE"))


class UnknownQueryError(KeyError):
    pass


class QueryRegistry:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._queries: dict[str, NamedQuery] = {}
        fragments = {
            p.stem: p.read_text(encoding="utf-8").strip() for p in sorted((root / "fragments").glob("*.cypher"))
        }
        for path in sorted(root.rglob("*.cypher")):
            name = path.relative_to(root).with_suffix("").as_posix()
            if name.startswith("fragments/"):
                continue
            text = _expand(path.read_text(encoding="utf-8").strip(), fragments, name)
            if not text:
                raise ValueError(f"query {name} is empty")
            self._queries[name] = NamedQuery(name, text, path)

    def __getitem__(self, name: str) -> NamedQuery:
        try:
            return self._queries[name]
        except KeyError:
            raise UnknownQueryError(f"no query named {name!r} under {self.root}") from None

    def __iter__(self) -> Iterator[NamedQuery]:
        return iter(self._queries.values())

    def names(self) -> list[str]:
        return list(self._queries)

    def migrations(self) -> list[tuple[int, NamedQuery]]:
        """(N, query) pairs in order; migration N may be several files, NNNN_1_..., NNNN_2_..."""
        out: list[tuple[int, NamedQuery]] = []
        for q in self._queries.values():
            if q.name.startswith("migrations/"):
                number = int(q.name.split("/", 1)[1].split("_", 1)[0])
                out.append((number, q))
        return sorted(out, key=lambda item: (item[0], item[1].name))


_INCLUDE = re.compile(r"^//@include\s+(\S+)\s*$", re.MULTILINE)


def _expand(text: str, fragments: dict[str, str], name: str) -> str:
    def fragment(m: re.Match[str]) -> str:
        if m.group(1) not in fragments:
            raise ValueError(f"query {name} includes unknown fragment {m.group(1)!r}")
        return fragments[m.group(1)]

    return _INCLUDE.sub(fragment, text)


@cache
def default_registry() -> QueryRegistry:
    return QueryRegistry(resource_dir("queries"))
