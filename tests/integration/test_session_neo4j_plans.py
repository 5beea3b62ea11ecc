"""The suite's Neo4j server keeps the plans it makes (tests/stores.py, SESSION_MIN_REPLAN_INTERVAL_S).

Checked on the running server, not on the command line that started it: the setting reaches
Neo4j only through the launcher (tools/neo4j-local/Neo4jLocal.java), and a launcher that dropped
it would start a server that replans every statement each 10 s with nothing else to show for it
but a CI run ~10 minutes longer (48 against 37 minutes of tests)."""

from __future__ import annotations

import neo4j
import pytest

from tests.stores import SESSION_MIN_REPLAN_INTERVAL_S, STORES, Neo4jServer

pytestmark = pytest.mark.skipif("neo4j" not in STORES, reason="GRAPHSVC_TEST_STORES leaves Neo4j out on purpose")


def test_the_session_server_keeps_its_plans_for_the_whole_run(neo4j_server: Neo4jServer) -> None:
    if neo4j_server.local is None:
        pytest.skip("an external or containerised server: its settings are its own")
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=(neo4j_server.user, neo4j_server.password)) as driver:
        records, _, _ = driver.execute_query(
            "SHOW SETTINGS YIELD name, value WHERE name = 'dbms.cypher.min_replan_interval' RETURN value"
        )
    assert SESSION_MIN_REPLAN_INTERVAL_S == 24 * 3600
    assert [r["value"] for r in records] == ["1d"]
