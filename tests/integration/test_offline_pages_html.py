"""The GraphiQL and API-docs pages reference only the service's own files, and say how to
install them when they are missing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.settings import Settings
from graphsvc.store.gateway import Gateway
from graphsvc.ui import offline

PAGES = ["/graphql", "/docs", "/redoc"]
HTML = {"accept": "text/html"}


@pytest.fixture
async def web(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(insecure_dev=True, dev_mode=True), gateway=gateway)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
        yield c


@pytest.mark.parametrize("path", PAGES)
async def test_pages_load_nothing_from_other_hosts(web: httpx.AsyncClient, path: str) -> None:
    if offline.missing("graphiql.min.js", "swagger-ui-bundle.js", "redoc.standalone.js"):
        pytest.skip("browser assets not installed (scripts/ui-assets.sh)")
    page = await web.get(path, headers=HTML)
    assert page.status_code == 200
    assert re.findall(r"""(?:src|href)=["']?(https?:)?//""", page.text) == []
    assert "/ui/vendor/" in page.text


@pytest.mark.parametrize("path", PAGES)
async def test_missing_assets_say_how_to_install_them(
    web: httpx.AsyncClient, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline, "VENDOR", tmp_path)
    page = await web.get(path, headers=HTML)
    assert page.status_code == 503
    assert "scripts/ui-assets.sh" in page.text
