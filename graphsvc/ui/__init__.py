"""The operators' explorer: static HTML, CSS and hand-written SVG served by the service itself.

No CDN and no build step, so it works on an air-gapped cluster and installs with the
package. It talks only to this service's GraphQL API.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"


def mount_ui(app: FastAPI) -> None:
    app.mount("/ui", StaticFiles(directory=STATIC, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui/")
