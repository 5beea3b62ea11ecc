"""Request body limits enforced before the body is parsed.

The JSON parser would otherwise hold a hostile 10 MB (or 10 GB) body in memory
before validation could say no. Content-Length is checked up front; bodies sent
chunked are counted as they stream and cut off at the limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _reject(send, 400, "invalid Content-Length header")
                    return
                if declared > limit:
                    await _reject(send, 413, f"request body is {declared} bytes; the limit is {limit}")
                    return
        seen = 0
        exceeded = False
        replaced = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            # Frameworks turn a failed body read into their own 400; say what happened instead.
            nonlocal replaced
            if not exceeded:
                await send(message)
            elif not replaced:
                replaced = True
                await _reject(send, 413, f"request body exceeds the limit of {limit} bytes")

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLarge:
            if not replaced:
                replaced = True
                await _reject(send, 413, f"request body exceeds the limit of {limit} bytes")


async def _reject(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": "request rejected", "message": message, "fields": []}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
