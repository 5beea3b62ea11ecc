"""Bounded fuzzing of the running service: schemathesis against the REST OpenAPI schema and
the GraphQL schema. No answer may be a 5xx, and REST answers must match their schema.

(schemathesis' own pytest plugin does not load under pytest 9, so each operation's
hypothesis strategy is driven directly; the generation and checks are schemathesis'.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from graphsvc.cli import push_cluster
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.stores import STORES, service_store_env

pytestmark = pytest.mark.slow
EXAMPLES = 20


@pytest.fixture(scope="module", params=STORES)
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    svc = ServiceProcess(
        tmp_path_factory.mktemp("fuzz") / "data",
        env={"GRAPHSVC_DEV_MODE": "true", **service_store_env(request.param, request)},
    )
    svc.start()
    asyncio.run(push_cluster(svc.url, build("l40s:hosts=2")))
    yield svc
    svc.stop()


def fuzz(schema: Any, checks: list[Callable[..., Any]]) -> int:
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: schemathesis.Case[Any]) -> None:
            response = case.call(timeout=30)
            case.validate_response(response, checks=checks)

        run()
    return operations


def test_rest_api_never_fails_or_breaks_its_schema(service: ServiceProcess) -> None:
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    assert fuzz(schema, [not_a_server_error, response_schema_conformance]) >= 5


def test_graphql_api_never_fails(service: ServiceProcess) -> None:
    schema = schemathesis.graphql.from_url(f"{service.url}/graphql")
    assert fuzz(schema, [not_a_server_error]) >= 10
