"""ui.backend_base: the hint that lets a fresh tab of a page URL connect at once (no server; the browser check
is tests/test_browser.py::test_a_fresh_tab_of_a_chapter_connects_at_once)."""

from __future__ import annotations

import asyncio
import gzip

from ui.backend_base import HINT, BackendBaseHint

INDEX = b"<!doctype html><html><head><title>Streamlit</title></head><body></body></html>"


def _static(seen: list):
    """An ASGI app like Streamlit's static handler: index.html for any path, gzipped when the client accepts it."""

    async def app(scope, receive, send):
        seen.append(scope)
        accepts_gzip = any(k == b"accept-encoding" and b"gzip" in v for k, v in scope["headers"])
        body = gzip.compress(INDEX) if accepts_gzip else INDEX
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        if accepts_gzip:
            headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        half = len(body) // 2  # in two parts, as a file response may send it
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})

    return app


def _get(path: str, method: str = "GET", kind: str = "http") -> tuple[dict, bytes, list]:
    seen: list = []
    sent: list = []
    scope = {"type": kind, "method": method, "path": path, "headers": [(b"accept-encoding", b"gzip, br")]}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(BackendBaseHint(_static(seen), page_urls=["ch3", "lab-flow"])(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return dict(start["headers"]), body, seen


def test_a_page_urls_html_names_the_apps_root():
    headers, body, seen = _get("/ch3")
    assert body == INDEX.replace(b"<head>", b"<head>" + HINT)
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"content-encoding" not in headers  # asked uncompressed, so the hint could go in
    assert not any(k == b"accept-encoding" for k, _ in seen[0]["headers"])
    assert b'new URL(".",location.href)' in HINT  # the URL's parent: a path prefix before the app is kept


def test_a_page_url_under_a_path_prefix_gets_the_hint_too():
    assert HINT in _get("/class/room1/lab-flow")[1]


def test_everything_else_passes_through_untouched():
    for path in ("/", "/_stcore/health", "/ch3/_stcore/health", "/static/js/index.js", "/nopage", "/ch3/"):
        headers, body, seen = _get(path)
        assert HINT not in gzip.decompress(body), path
        assert headers[b"content-encoding"] == b"gzip", path  # the client's accept-encoding left as it was
    assert HINT not in _get("/ch3", method="HEAD")[1]
