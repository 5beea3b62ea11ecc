"""GraphiQL, Swagger UI and ReDoc served from the service's own files, never from a CDN.

The browser assets come from pinned npm packages (`tools/ui-assets`, copied into
`static/vendor` by `scripts/ui-assets.sh`, ignored by git): an air-gapped cluster gets working
pages, and a browser never leaks the operator's address to a public CDN. Where the assets were
not installed the pages say so and how to fix it, instead of staying blank.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.requests import Request
from starlette.responses import Response
from strawberry.subscriptions import GRAPHQL_SSE_PROTOCOL, GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from graphsvc.api.strict_routes import StrictGraphQLRouter

VENDOR = Path(__file__).resolve().parent / "static" / "vendor"
PREFIX = "/ui/vendor"
FIX = "run scripts/ui-assets.sh (npm ci in tools/ui-assets, then node tools/ui-assets/vendor.mjs)"


def missing(*files: str) -> list[str]:
    """The vendored files a page needs that are not installed."""
    return [f for f in files if not (VENDOR / f).is_file()]


def not_installed(what: str, files: list[str]) -> HTMLResponse:
    body = (
        f"<!doctype html><title>{what} not installed</title><h1>{what}'s files are not installed</h1>"
        f"<p>Missing: {html.escape(', '.join(files))} in {html.escape(str(VENDOR))}.</p>"
        f"<p>Fix: {html.escape(FIX)}.</p>"
    )
    return HTMLResponse(body, status_code=503)


GRAPHIQL_FILES = ("react.production.min.js", "react-dom.production.min.js", "graphiql.min.js", "graphiql.min.css")
GRAPHIQL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>graphsvc · GraphiQL</title>
<link rel="stylesheet" href="{p}/graphiql.min.css">
<style>body {{ margin: 0; }} #graphiql {{ height: 100vh; }}</style></head>
<body><div id="graphiql">Loading GraphiQL…</div>
<script src="{p}/react.production.min.js"></script>
<script src="{p}/react-dom.production.min.js"></script>
<script src="{p}/graphiql.min.js"></script>
<script>
  // The explorer keeps the operator's API token in local storage; GraphiQL sends the same one.
  const token = localStorage.getItem("graphsvc-token");
  const fetcher = GraphiQL.createFetcher({{
    url: location.pathname,
    headers: token ? {{ authorization: "Bearer " + token }} : {{}},
  }});
  const defaultQuery = "# graphsvc: where can this job run well?\\n" +
    "{{\\n  clusterSummary {{ hosts gpus freeGpus staleHosts }}\\n" +
    "  placementText(text: \\"8xH100 nvlink=full-mesh\\") {{\\n" +
    "    candidates {{ rank score reason }}\\n    infeasible {{ constraint message }}\\n  }}\\n}}\\n";
  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(GraphiQL, {{ fetcher, defaultQuery, defaultEditorToolsVisibility: true }}));
</script></body></html>
"""


# The last event of a graphql-sse stream (strawberry's SSETransport.encode_complete).
SSE_COMPLETE = "event: complete\r\ndata: \r\n\r\n"


def _streams_closing(app: Any) -> asyncio.Event:
    """The app's "end every subscription stream" signal, made on first use."""
    closing: asyncio.Event | None = getattr(app.state, "graphql_streams_closing", None)
    if closing is None:
        closing = asyncio.Event()
        app.state.graphql_streams_closing = closing
    return closing


def end_streams(app: Any) -> None:
    """End every open subscription stream over HTTP (an explorer tab's events) and any opened
    after: each sends its `complete` event and its response ends. Called as the server starts to
    shut down. Why: uvicorn waits for every response to finish before it stops the app, and an
    events stream never finishes by itself, so SIGTERM with one explorer tab open did not exit
    (60 s and more, until the tab closed) and the embedded store was left running by a second Ctrl-C."""
    if hasattr(app, "state"):
        _streams_closing(app).set()


class LocalGraphiQLRouter(StrictGraphQLRouter):
    """The strict-JSON GraphQL router with GraphiQL loaded from this service instead of unpkg.com.

    Subscriptions also stream over plain HTTP (graphql-sse, `Accept: text/event-stream`), so
    the explorer's live refresh needs no WebSocket library on the server or proxy support.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault(
            "subscription_protocols", (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL)
        )
        super().__init__(*args, **kwargs)

    async def create_streaming_response(
        self,
        request: Request,
        stream: Callable[[], AsyncIterator[str]],
        sub_response: Response,
        headers: Mapping[str, str],
    ) -> Response:
        """Strawberry's streaming response, ended by `end_streams` (see there)."""
        closing = _streams_closing(request.app)
        sse = "text/event-stream" in headers.get("Content-Type", "")

        async def until_closing() -> AsyncIterator[str]:
            source = stream()
            stop = asyncio.ensure_future(closing.wait())
            try:
                while True:
                    step = asyncio.ensure_future(anext(source))
                    await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
                    if step.done():
                        try:
                            chunk = step.result()
                        except StopAsyncIteration:
                            return
                        yield chunk
                        continue
                    step.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await step
                    if sse:
                        yield SSE_COMPLETE
                    return
            finally:
                stop.cancel()
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()

        return await super().create_streaming_response(request, until_closing, sub_response, headers)

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        gone = missing(*GRAPHIQL_FILES)
        if gone:
            return not_installed("GraphiQL", gone)
        return HTMLResponse(GRAPHIQL.format(p=PREFIX))


def mount_api_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc from local files; create the app with docs_url=None."""
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        gone = missing("swagger-ui-bundle.js", "swagger-ui.css")
        if gone:
            return not_installed("Swagger UI", gone)
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} · API docs",
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        gone = missing("redoc.standalone.js")
        if gone:
            return not_installed("ReDoc", gone)
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} · API reference",
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/favicon-32x32.png",
            with_google_fonts=False,
        )
