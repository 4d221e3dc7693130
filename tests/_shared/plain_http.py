"""A plain web server that is not Triton (``GET /v2`` answers 404 with HTML), optionally slow: the doctor's bad
input, for tests/unit/test_doctor.py and tests/unit/test_lab_doctor.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Plain(BaseHTTPRequestHandler):
    delay_s = 0.0

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        time.sleep(self.delay_s)
        body = b"<html>a plain web server</html>"
        self.send_response(404 if self.path.startswith("/v2") else 200)
        self.send_header("Content-Length", str(len(body)))
        try:
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting: what a slow server sees
            pass


@contextmanager
def plain_http(delay_s: float = 0.0) -> Iterator[str]:
    """``host:port`` of a plain web server that waits ``delay_s`` before each answer, for the ``with`` block."""
    handler = type("Handler", (_Plain,), {"delay_s": delay_s})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
