"""The server's lifespan: the store opened, then the startup heap frozen until shutdown.

Runs the real lifespan (no gateway handed in), so the store it opens is the configured one:
the embedded FalkorDB in a fresh data dir, or the test Neo4j server.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from graphsvc.api.app import YOUNG_COLLECTION_THRESHOLD, create_app
from graphsvc.settings import Settings
from tests.stores import NEO4J_TEST_TIMEOUT_S, Neo4jServer


async def test_the_lifespan_freezes_the_heap_once_the_store_is_open(
    store: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if store == "neo4j":
        server: Neo4jServer = request.getfixturevalue("neo4j_server")
        settings = Settings(store=server.uri, neo4j_user=server.user, neo4j_password=server.password,
                            data_dir=tmp_path, query_timeout_s=NEO4J_TEST_TIMEOUT_S)  # fmt: skip
    else:
        settings = Settings(data_dir=tmp_path, query_timeout_s=NEO4J_TEST_TIMEOUT_S)
    app = create_app(settings.model_copy(update={"insecure_dev": True}))
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    async with app.router.lifespan_context(app):
        assert app.state.services is not None
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds
