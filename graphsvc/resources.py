"""Locates the declared schema and the named queries.

They live at the repository root (``schema/``, ``queries/``) so that reviewers
find them where the architecture says; a built wheel carries copies under
``graphsvc/_data``. Looking in both places keeps editable and wheel installs alike.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"graphsvc resource directory {name!r} not found next to {_PACKAGE}")
