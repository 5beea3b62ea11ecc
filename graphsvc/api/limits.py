"""Request body limits enforced before the body is read, by who is asking.

The JSON parser would otherwise hold a hostile 60 MB body (800 MB once parsed) in memory
before validation, or authentication, could say no. So the caller is identified from the
headers first and the limit depends on it: an anonymous caller may send almost nothing
(its request is refused with 401 as soon as it is known to be too large, without reading
the rest), callers with a token get the route's normal limit, and only operators get the
large fabric limit. Content-Length is checked up front; bodies sent chunked are counted as
they stream and cut off at the limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    pass


@dataclass(frozen=True)
class BodyPolicy:
    """How many body bytes this request may send, and whether its caller is known."""

    limit: int
    authenticated: bool = True


ANONYMOUS_MESSAGE = "authentication required before sending a request body: send 'Authorization: Bearer <token>'"


class BodySizeLimit:
    def __init__(self, app: ASGIApp, policy_for: Callable[[Scope], BodyPolicy]) -> None:
        self.app = app
        self.policy_for = policy_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.policy_for(scope)
        limit = policy.limit

        async def refuse(detail: str) -> None:
            if policy.authenticated:
                await _reject(send, 413, detail)
            else:
                await _reject(send, 401, ANONYMOUS_MESSAGE, [(b"www-authenticate", b"Bearer")])

        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _reject(send, 400, "invalid Content-Length header")
                    return
                if declared > limit:
                    await refuse(f"request body is {declared} bytes; the limit is {limit}")
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
                await refuse(f"request body exceeds the limit of {limit} bytes")

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLarge:
            if not replaced:
                replaced = True
                await refuse(f"request body exceeds the limit of {limit} bytes")


async def _reject(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": "request rejected", "message": message, "fields": []}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
