"""GraphiQL, Swagger UI and ReDoc work with every non-local request blocked (no CDN)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.service import ServiceProcess


def test_graphiql_answers_a_query_offline(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    page.goto(f"{service.url}/graphql", wait_until="load")
    page.wait_for_selector(".graphiql-execute-button", timeout=60_000)
    page.click(".graphiql-execute-button")
    page.wait_for_function(
        "(document.querySelector('.result-window')?.innerText || '').includes('freeGpus')",
        timeout=60_000,
    )
    assert '"gpus": 1184' in page.inner_text(".result-window")
    page.screenshot(path=str(docs_dir / "screenshots" / "graphiql.png"))


def test_swagger_docs_render_offline(service: ServiceProcess, page: Any, docs_dir: Path) -> None:
    page.goto(f"{service.url}/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=60_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/v1/hosts/" in p for p in paths)
    page.screenshot(path=str(docs_dir / "screenshots" / "api-docs.png"))


def test_redoc_renders_offline(service: ServiceProcess, page: Any) -> None:
    page.goto(f"{service.url}/redoc")
    page.wait_for_selector("h1", timeout=60_000)
    page.wait_for_function("document.body.innerText.includes('/v1/hosts/')", timeout=60_000)
