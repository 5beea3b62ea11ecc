"""Runs last in its process (tests/zz_last): no log line so far contains a configured secret.

The whole session's lines are checked again when each process's session ends (the
`capture_all_logs` fixture): under pytest-xdist (scripts/test.sh) this file runs on one worker,
not necessarily after every other test."""

from __future__ import annotations

import logging

import pytest

from graphsvc.settings import Settings
from graphsvc.store.errors import StoreError
from graphsvc.store.factory import open_store
from tests.conftest import FALKOR_TEST_SECRET, NEO4J_TEST_SECRET, LogCapture


async def test_failures_with_secrets_configured_do_not_log_them() -> None:
    for settings in (
        Settings(store="neo4j://127.0.0.1:9", neo4j_password=NEO4J_TEST_SECRET),
        Settings(store=f"falkordb://user:{FALKOR_TEST_SECRET}@127.0.0.1:9"),
    ):
        with pytest.raises((StoreError, OSError, ValueError)) as err:
            async with open_store(settings):
                pass
        assert NEO4J_TEST_SECRET not in str(err.value) and FALKOR_TEST_SECRET not in str(err.value)
        assert NEO4J_TEST_SECRET not in repr(settings) and FALKOR_TEST_SECRET not in str(settings.falkordb_password)


def test_no_log_line_contains_a_secret() -> None:
    logging.getLogger("tests.zz_last").info("the session log capture is on")
    assert LogCapture.lines[-1] == "tests.zz_last: the session log capture is on", "the capture sees nothing"
    assert LogCapture.secret_leaks() == []
