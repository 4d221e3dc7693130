"""Tells a fresh tab of a page's own URL where Streamlit's server is, so it connects at once.

A fresh tab of ``/ch3`` does not know whether the app lives at ``/`` or at ``/ch3``: Streamlit's frontend
asks ``/ch3/_stcore/health`` first, gets a 404, waits 100 ms and asks ``/_stcore/health`` (in Chromium's
traces its websocket opened 0.1-0.15 s later than it could, on every fresh tab of a chapter: a shared link). The
frontend takes the answer from ``window.__streamlit.BACKEND_BASE_URL`` when a page sets it. This ASGI
middleware (``app.py`` serves Streamlit through ``streamlit.starlette.App`` with it) sets it in the HTML of
the app's own page URLs: the URL's parent, so a path prefix in front of the app keeps working.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HINT = (
    b"<script>window.__streamlit=Object.assign({},window.__streamlit,"
    b'{BACKEND_BASE_URL:new URL(".",location.href).href});</script>'
)


class BackendBaseHint:
    """Adds HINT to the HTML answered for ``<base_path>/<page>`` (a page of ``page_urls``, under Streamlit's
    ``server.baseUrlPath``); everything else passes through untouched."""

    def __init__(self, app: ASGIApp, page_urls: Iterable[str], base_path: str = "") -> None:
        self.app = app
        prefix = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self.page_paths = frozenset(f"{prefix}/{url}" for url in page_urls if url)

    def _is_page(self, scope: Scope) -> bool:
        return scope["type"] == "http" and scope.get("method") == "GET" and scope["path"] in self.page_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._is_page(scope):
            await self.app(scope, receive, send)
            return
        # the page's HTML uncompressed (about 10 KB), so the hint can go in; and no zero-copy file send, whose
        # body this middleware would not see
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"accept-encoding", b"range")]
        extensions = {
            k: v for k, v in (scope.get("extensions") or {}).items() if k != "http.response.pathsend"
        }
        scope = {**scope, "headers": headers, "extensions": extensions}
        held: Message | None = None  # a 200 HTML answer's start, sent once its body has the hint
        body: list[bytes] = []

        async def send_with_hint(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                if message.get("status") == 200 and _is_html(message):
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                await _send_with_hint(send, held, b"".join(body))
                return
            await send(message)

        await self.app(scope, receive, send_with_hint)


def _is_html(start: Message) -> bool:
    return any(
        k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in start.get("headers", [])
    )


async def _send_with_hint(send: Send, start: Message, data: bytes) -> None:
    """The page's answer with HINT in its head: its length anew, and no validator of the file's own (the body
    differs from index.html's, so its ETag and date no longer name it)."""
    headers = list(start.get("headers", []))
    if b"<head>" in data:
        data = data.replace(b"<head>", b"<head>" + HINT, 1)
        dropped = (b"content-length", b"etag", b"last-modified")
        headers = [(k, v) for k, v in headers if k.lower() not in dropped]
        headers.append((b"content-length", str(len(data)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": data})
