"""`first` below 1 on the paged fields `hosts`, `gpus`, `gpuGrid` and `fabric`: an empty page that
says no more follow. It said hasNextPage true with endCursor null, so a client following
hasNextPage/endCursor started again from the beginning, forever (graphsvc.paging)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from graphsvc.store.gateway import Gateway
from tests.cluster_helpers import load

QUERIES = {
    "hosts": "query($f: Int!, $a: String) { page: hosts(first: $f, after: $a) { "
    "nodes { name } pageInfo { hasNextPage endCursor } } }",
    "gpus": "query($f: Int!, $a: String) { page: gpus(first: $f, after: $a) { "
    "nodes { uuid } pageInfo { hasNextPage endCursor } } }",
    "fabric": "query($f: Int!, $a: String) { page: fabric(first: $f, after: $a) { "
    "switches { name } pageInfo { hasNextPage endCursor } } }",
    "gpuGrid": "query($f: Int!, $a: String) { page: gpuGrid(first: $f, after: $a) { rows hasNextPage endCursor } }",
}


def shape(field: str, page: dict[str, Any]) -> tuple[int, bool, str | None]:
    """(rows, hasNextPage, endCursor) of a page of any of the four fields."""
    if field == "gpuGrid":
        return len(page["rows"]), page["hasNextPage"], page["endCursor"]
    rows = page["switches"] if field == "fabric" else page["nodes"]
    return len(rows), page["pageInfo"]["hasNextPage"], page["pageInfo"]["endCursor"]


async def page(client: httpx.AsyncClient, field: str, first: int, after: str | None = None) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": QUERIES[field], "variables": {"f": first, "a": after}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["page"]
    return found


@pytest.fixture
async def cluster(gateway: Gateway) -> Gateway:
    await load(gateway, "l40s:hosts=2")
    return gateway


@pytest.mark.parametrize("field", sorted(QUERIES))
async def test_first_below_one_is_an_empty_last_page(client: httpx.AsyncClient, cluster: Gateway, field: str) -> None:
    for first in (0, -1, -100):
        assert shape(field, await page(client, field, first)) == (0, False, None), first


@pytest.mark.parametrize("field", sorted(QUERIES))
async def test_a_client_following_the_pages_ends(client: httpx.AsyncClient, cluster: Gateway, field: str) -> None:
    """Pages of one still walk everything and stop: the rule for `first` < 1 does not cut a walk short."""
    after: str | None = None
    seen = 0
    for _ in range(1000):
        rows, more, after = shape(field, await page(client, field, 1, after))
        seen += rows
        if not more:
            break
    else:
        raise AssertionError(f"{field}: still more after 1000 pages")
    assert seen >= 2
