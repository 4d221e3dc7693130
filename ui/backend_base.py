"""Tells a fresh tab of a page's own URL where Streamlit's server is, so it connects at once.

A fresh tab of ``/ch3`` does not know whether the app lives at ``/`` or at ``/ch3``: Streamlit's frontend
asks ``/ch3/_stcore/health`` first, gets a 404, waits 100 ms and asks ``/_stcore/health`` (measured in
Chromium's trace: 0.06-0.2 s of every fresh tab of a chapter, a shared link's first paint included). The
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
    """Adds HINT to the HTML answered for ``/<page>`` (one of ``page_urls``); everything else passes through."""

    def __init__(self, app: ASGIApp, page_urls: Iterable[str]) -> None:
        self.app = app
        self.page_urls = frozenset(page_urls)

    def _is_page(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and scope.get("method") == "GET"
            and scope["path"].rsplit("/", 1)[-1] in self.page_urls
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._is_page(scope):
            await self.app(scope, receive, send)
            return
        # the page's HTML uncompressed (about 1 KB), so the hint can go in
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"]
        scope = {**scope, "headers": headers}
        start: Message = {}
        body: list[bytes] = []

        async def send_with_hint(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data = b"".join(body)
            out_headers = list(start.get("headers", []))
            is_html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in out_headers)
            if is_html and b"<head>" in data:
                data = data.replace(b"<head>", b"<head>" + HINT, 1)
                out_headers = [(k, v) for k, v in out_headers if k.lower() != b"content-length"]
                out_headers.append((b"content-length", str(len(data)).encode()))
            await send({**start, "headers": out_headers})
            await send({"type": "http.response.body", "body": data})

        await self.app(scope, receive, send_with_hint)
