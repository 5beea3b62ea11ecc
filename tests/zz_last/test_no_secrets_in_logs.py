"""Runs last (tests/zz_last): no log line of the whole test session contains a configured secret."""

from __future__ import annotations

import sys

import pytest

from graphsvc.settings import Settings
from graphsvc.store.errors import StoreError
from graphsvc.store.factory import open_store
from tests.conftest import LogCapture

NEO4J_PASSWORD = "neo4j-pw-4b1e77c2"
FALKOR_PASSWORD = "falkor-pw-93ad01f5"


async def test_failures_with_secrets_configured_do_not_log_them() -> None:
    for settings in (
        Settings(store="neo4j://127.0.0.1:9", neo4j_password=NEO4J_PASSWORD),
        Settings(store=f"falkordb://user:{FALKOR_PASSWORD}@127.0.0.1:9"),
    ):
        with pytest.raises((StoreError, OSError, ValueError)) as err:
            async with open_store(settings):
                pass
        assert NEO4J_PASSWORD not in str(err.value) and FALKOR_PASSWORD not in str(err.value)
        assert NEO4J_PASSWORD not in repr(settings) and FALKOR_PASSWORD not in str(settings.falkordb_password)


def test_no_log_line_contains_a_secret() -> None:
    secrets = [NEO4J_PASSWORD, FALKOR_PASSWORD]
    # Every test module that minted tokens lists them as SECRETS (test_authorization, tests/faults/...).
    for name, module in list(sys.modules.items()):
        if name.startswith("tests.") and isinstance(getattr(module, "SECRETS", None), tuple):
            secrets.extend(module.SECRETS)
    assert LogCapture.lines, "the session log capture saw nothing"
    leaks = [line[:200] for line in LogCapture.lines for s in secrets if s in line]
    assert leaks == []
