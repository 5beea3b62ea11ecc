"""Operator-only writes (`PUT /v1/fabric`, `/v1/sites`, `/v1/prices`) refuse another role before
the body is read: a scheduler or collector got a 422 listing what was wrong with its body (and
could push up to 4 MiB through full validation) where the answer is 403."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.test_authorization import auth, secured  # noqa: F401 - the fixture

BAD = {
    "/v1/fabric": {"cluster": "x", "switches": [{"name": "bad name", "tier": "leaf"}]},
    "/v1/sites": {"sites": [{"name": "", "kind": "nope"}]},
    "/v1/prices": {"catalog": 7},
}


@pytest.mark.parametrize("path", sorted(BAD))
@pytest.mark.parametrize(("who", "expected"), [(None, 401), ("collector-a", 403), ("sched-1", 403), ("ops", 422)])
async def test_the_role_is_checked_before_the_body(
    secured: tuple[httpx.AsyncClient, Any],  # noqa: F811 - the fixture
    path: str,
    who: str | None,
    expected: int,
) -> None:
    c, _ = secured
    resp = await c.put(path, json=BAD[path], headers=auth(who))
    assert resp.status_code == expected, resp.text


@pytest.mark.parametrize("path", sorted(BAD))
async def test_a_body_that_is_not_json_is_not_read_for_a_scheduler(
    secured: tuple[httpx.AsyncClient, Any],  # noqa: F811 - the fixture
    path: str,
) -> None:
    """Not even parsed: the bytes a scheduler sends are no JSON at all, and the answer is still 403."""
    c, _ = secured
    headers = {**auth("sched-1"), "content-type": "application/json"}
    resp = await c.put(path, content=b"{not json" * 1000, headers=headers)
    assert resp.status_code == 403, resp.text
    assert "operator" in resp.json()["error"]
