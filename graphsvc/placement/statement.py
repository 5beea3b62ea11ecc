"""The Cypher a placement ran to find its candidates, as a person can rerun it in Neo4j Browser.

`explain` answers "why these candidates, and not others" with the statement itself: its name,
its text (fragments expanded) and the parameter values it ran with. `browser` is one paste for
Neo4j Browser: a `:params` command with the values as a Cypher map literal, then the statement
without its comment lines (Browser splits commands on `;`, which a comment may hold).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from graphsvc.store.queries import without_comment_lines

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    params: dict[str, object] = field(default_factory=dict)

    @property
    def browser(self) -> str:
        body = without_comment_lines(self.text)
        return f":params {cypher_literal(self.params)};\n{body.strip()}\n"


def cypher_literal(value: object) -> str:
    """A Cypher literal for a parameter value (the JSON-like values the gateway accepts)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{value} has no Cypher literal")
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        return f"'{escaped}'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            name = str(key) if _PLAIN_KEY.match(str(key)) else "`" + str(key).replace("`", "``") + "`"
            parts.append(f"{name}: {cypher_literal(item)}")
        return "{" + ", ".join(parts) + "}"
    raise TypeError(f"no Cypher literal for {type(value).__name__}")
