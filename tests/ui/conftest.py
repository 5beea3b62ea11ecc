"""One service with the demo cluster and one offline Chromium for every browser test.

Chromium is Debian's (Playwright's `executable_path`, no browser download); every request
to a host other than the service is aborted and recorded, so a page that needs the internet
fails its test instead of passing on a connected machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from graphsvc.cli import push_cluster
from graphsvc.store.neo4j_backend import Neo4jBackend
from graphsvc.synthetic.clusters import build
from tests.service import ServiceProcess
from tests.stores import Neo4jServer, neo4j_env, reset_neo4j

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[2]
# The docs' screenshots and render times are refreshed only on request, so a test run leaves
# the checkout clean: GRAPHSVC_UPDATE_DOCS=1 pytest tests/ui
UPDATE_DOCS = os.environ.get("GRAPHSVC_UPDATE_DOCS") == "1"
FLAGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/ui/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.slow)
            if CHROMIUM is None:
                item.add_marker(pytest.mark.skip(reason="no Chromium on this machine (apt-get install chromium)"))


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/ when refreshing the docs, else a temporary folder with the same layout."""
    docs = ROOT / "docs" if UPDATE_DOCS else tmp_path_factory.mktemp("docs")
    (docs / "screenshots").mkdir(parents=True, exist_ok=True)
    (docs / "benchmarks").mkdir(parents=True, exist_ok=True)
    return docs


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    # Facts pushed once must not go stale during a long UI run (other modules' services start
    # between): staleness has its own service in test_stale.py.
    env = {"GRAPHSVC_DEV_MODE": "true", "GRAPHSVC_STALE_AFTER_S": "86400"}
    svc = ServiceProcess(tmp_path_factory.mktemp("ui") / "data", env=env)
    svc.start()
    asyncio.run(push_cluster(svc.url, build("demo")))
    yield svc
    svc.stop()


class Browser:
    """A page that may talk only to the service; `foreign` lists every request it refused."""

    def __init__(self, page: Any, own: str) -> None:
        self.page = page
        self.own = own
        self.foreign: list[str] = []

    def guard(self, route: Any) -> None:
        if urlsplit(route.request.url).netloc != self.own:
            self.foreign.append(route.request.url)
            route.abort()
        else:
            route.continue_()


@pytest.fixture(scope="module")
def browser(service: ServiceProcess) -> Iterator[Browser]:
    """Per module: Playwright's sync API keeps an event loop running in this thread while it
    is open, which would break every later test that calls asyncio.run()."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        b = Browser(context.new_page(), urlsplit(service.url).netloc)
        context.route("**/*", b.guard)
        yield b
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Any]:
    """The shared page; each test must leave it having asked nothing of any other host."""
    browser.foreign.clear()
    yield browser.page
    assert browser.foreign == [], f"requests left for other hosts: {browser.foreign}"


def in_thread(coro: Coroutine[Any, Any, None]) -> None:
    """Playwright's event loop may run in this thread: run the coroutine on another."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


async def _reset(server: Neo4jServer) -> None:
    backend = Neo4jBackend(server.uri, user=server.user, password=server.password)
    await backend.open()
    try:
        await reset_neo4j(backend)
    finally:
        await backend.close()


@contextmanager
def store_service(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    load: Callable[[str], Coroutine[Any, Any, None]],
) -> Iterator[ServiceProcess]:
    """A service of its own on the store `request.param` names (an emptied Neo4j server, or a
    fresh embedded store), loaded by `load(url)`: for views whose controls write through the store."""
    env = {"GRAPHSVC_DEV_MODE": "true", "GRAPHSVC_STALE_AFTER_S": "86400"}
    if request.param == "neo4j":
        server: Neo4jServer = request.getfixturevalue("neo4j_server")
        env.update(neo4j_env(server.uri, server.password))
        in_thread(_reset(server))
    svc = ServiceProcess(tmp_path_factory.mktemp(f"{name}-{request.param}") / "data", env=env)
    svc.start(timeout_s=300 if request.param == "neo4j" else 60)  # Neo4j: schema and migrations first
    try:
        in_thread(load(svc.url))
        yield svc
    finally:
        svc.stop()


@contextmanager
def offline_page(page: Any, service_url: str, **context_options: Any) -> Iterator[Any]:
    """A fresh page (own origin storage) for another service, with the same offline guard;
    context_options go to Playwright's new_context (a device_scale_factor, say)."""
    context = page.context.browser.new_context(viewport={"width": 1400, "height": 900}, **context_options)
    guard = Browser(None, urlsplit(service_url).netloc)
    context.route("**/*", guard.guard)
    try:
        yield context.new_page()
    finally:
        context.close()
    assert guard.foreign == [], f"requests left for other hosts: {guard.foreign}"
