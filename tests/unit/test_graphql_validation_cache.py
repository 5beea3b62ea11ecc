"""The depth/alias limiter rules are built once, so a repeated document is validated from the cache."""

from __future__ import annotations

from typing import Any

from strawberry.extensions.validation_cache import _get_validate_cache

from graphsvc.api.graphql.limiter_rules import LIMIT_RULES, limit_rules
from graphsvc.api.graphql.schema import make_schema


def test_every_request_gets_the_same_rule_classes() -> None:
    assert limit_rules().validation_rules == LIMIT_RULES
    assert limit_rules().validation_rules is limit_rules().validation_rules


async def test_a_repeated_document_hits_the_validation_cache() -> None:
    schema = make_schema(dev=True)
    cache: Any = _get_validate_cache(256)  # an lru_cache-wrapped function
    query = "{ __typename a1: __typename }"
    await schema.execute(query)
    before = cache.cache_info().hits
    for _ in range(3):
        result = await schema.execute(query)
        assert result.errors is None
    assert cache.cache_info().hits == before + 3


async def test_the_limits_still_refuse_deep_and_aliased_documents() -> None:
    schema = make_schema(dev=True)
    aliased = "{ " + " ".join(f"a{i}: __typename" for i in range(40)) + " }"
    result = await schema.execute(aliased)
    assert result.errors and "aliases" in str(result.errors[0]).lower()
