"""A stand-in HTTP service's answer, for tests that run the CLI against one (no graph store)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    """A JSON answer with its length, as the service gives one."""
    handler.send_response(status)
    for name, value in {"content-type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
