"""ui.backend_base: the hint that lets a fresh tab of a page URL connect at once (no server; the browser check
is tests/browser/test_browser.py::test_a_fresh_tab_of_a_chapter_connects_at_once)."""

from __future__ import annotations

import asyncio
import gzip

from ui.backend_base import HINT, BackendBaseHint

INDEX = b"<!doctype html><html><head><title>Streamlit</title></head><body></body></html>"
PAGES = ["ch3", "lab-flow", "home"]


def _static(seen: list, status: int = 200, content_type: bytes = b"text/html; charset=utf-8"):
    """An ASGI app like Streamlit's static handler: index.html for any path (gzipped when the client accepts it,
    a 206 part when it asks a range), with the file's validators."""

    async def app(scope, receive, send):
        seen.append(scope)
        if scope["type"] != "http":
            return
        accepts_gzip = any(k == b"accept-encoding" and b"gzip" in v for k, v in scope["headers"])
        ranged = any(k == b"range" for k, _ in scope["headers"])
        body = b"" if status == 304 else gzip.compress(INDEX) if accepts_gzip else INDEX
        body = body[:20] if ranged else body
        headers = [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
            (b"etag", b'"index-html"'),
            (b"last-modified", b"Tue, 01 Dec 2026 10:27:08 GMT"),
        ]
        if accepts_gzip:
            headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 206 if ranged else status, "headers": headers})
        half = len(body) // 2  # in two parts, as a file response may send it
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})

    return app


def _call(path: str, method: str = "GET", base_path: str = "", extra: tuple = (), **static) -> tuple:
    """The middleware in front of _static: (status, response headers, body, the scope the app got)."""
    seen: list = []
    sent: list = []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"accept-encoding", b"gzip, br"), *extra],
        "extensions": {"http.response.pathsend": {}},
    }

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    app = BackendBaseHint(_static(seen, **static), page_urls=PAGES, base_path=base_path)
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body, seen[0]


def test_a_page_urls_html_names_the_apps_root():
    status, headers, body, scope = _call("/ch3")
    assert status == 200 and body == INDEX.replace(b"<head>", b"<head>" + HINT)
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"content-encoding" not in headers  # asked uncompressed, so the hint could go in
    assert b"etag" not in headers and b"last-modified" not in headers  # they name index.html, not this body
    assert not any(k == b"accept-encoding" for k, _ in scope["headers"])
    assert "http.response.pathsend" not in scope["extensions"]  # a zero-copy send would skip the hint


def test_under_a_base_url_path_only_its_pages_get_the_hint():
    assert HINT in _call("/room1/lab-flow", base_path="room1/")[2]
    assert HINT in _call("/home", base_path="")[2]
    # the app's root when baseUrlPath ends in a page's name: not a page (the hint would name the wrong root)
    assert HINT not in gzip.decompress(_call("/ch3", base_path="ch3")[2])
    assert HINT not in gzip.decompress(_call("/x/ch3")[2])  # not one of the app's page URLs


def test_everything_else_passes_through_untouched():
    for path in ("/", "/_stcore/health", "/ch3/_stcore/health", "/static/js/index.js", "/nopage", "/ch3/"):
        status, headers, body, _ = _call(path)
        assert HINT not in gzip.decompress(body), path
        assert headers[b"content-encoding"] == b"gzip", path  # the client's accept-encoding left as it was
        assert headers[b"etag"] == b'"index-html"', path
    assert HINT not in _call("/ch3", method="HEAD")[2]


def test_answers_that_are_not_a_whole_html_page_pass_through():
    status, headers, body, _ = _call("/ch3", status=304)
    assert (status, body, headers[b"etag"]) == (304, b"", b'"index-html"')
    status, headers, body, _ = _call("/ch3", content_type=b"application/json")
    assert status == 200 and HINT not in body and headers[b"content-length"] == str(len(body)).encode()
    # a range request is asked whole: the hint goes into the whole page, never into a part
    status, headers, body, scope = _call("/ch3", extra=((b"range", b"bytes=0-19"),))
    assert status == 200 and HINT in body and not any(k == b"range" for k, _ in scope["headers"])


def test_websockets_and_lifespan_pass_through():
    for kind in ("websocket", "lifespan"):
        seen: list = []
        scope = {"type": kind, "path": "/ch3", "headers": [(b"accept-encoding", b"gzip")]}

        async def nothing(*_):
            return None

        asyncio.run(BackendBaseHint(_static(seen), page_urls=PAGES)(scope, nothing, nothing))
        assert seen == [scope], kind  # the same scope object: nothing stripped
