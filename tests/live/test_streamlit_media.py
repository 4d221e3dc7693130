"""The starlette pin, guarded without a browser: Streamlit 1.60 serves st.image's /media URL with HTTP 200.

With starlette >= 1.1 (1.1.0 and 1.10 both tried), Streamlit 1.60's media endpoint answers 500, so every image
and download on the app's pages breaks (requirements.txt pins starlette==1.0.0). The browser test sees that as
broken images; this test needs only `streamlit run` and Streamlit's own websocket protocol.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request

import pytest
from conftest import wait_http

from triton_kitchen.core.server import free_port

# what Chromium sends for an <img>; the breakage is in the compression middleware, so Accept-Encoding matters
BROWSER_HEADERS = {
    "Accept": "image/avif,image/webp,image/*,*/*;q=0.8",
    "Accept-Encoding": "gzip, deflate, br, zstd",
}
pytestmark = pytest.mark.live  # starts `streamlit run` (no tritonserver)

SCRIPT = """
import numpy as np
import streamlit as st

st.image(np.full((16, 16, 3), 200, dtype=np.uint8))
st.download_button("csv", "a,b\\n1,2\\n", file_name="x.csv")
"""


async def media_urls(ws_url: str) -> list[str]:
    """Run the script once over Streamlit's websocket (as a tab does) and return its /media URLs."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    urls = []
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=30) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        await ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await asyncio.wait_for(ws.recv(), 60))
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                if element.WhichOneof("type") == "imgs":
                    urls += [img.url for img in element.imgs.imgs]
                elif element.WhichOneof("type") == "download_button":
                    urls.append(element.download_button.url)
            elif kind == "script_finished":
                return urls


def test_media_files_are_served(tmp_path):
    (tmp_path / "media_app.py").write_text(textwrap.dedent(SCRIPT))
    port = free_port()
    with open(tmp_path / "streamlit.log", "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "streamlit", "run", "media_app.py", "--server.headless", "true",
                "--server.port", str(port), "--server.address", "127.0.0.1",
                "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
            ],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/_stcore/health", 60)
        urls = asyncio.run(media_urls(f"ws://127.0.0.1:{port}/_stcore/stream"))
        assert len(urls) == 2 and all(u.startswith("/media/") for u in urls), urls
        for url in urls:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}{url}", headers=BROWSER_HEADERS)
                with urllib.request.urlopen(request, timeout=10) as resp:
                    status, body = resp.status, resp.read()
            except urllib.error.HTTPError as err:
                status, body = err.code, b""
            log_tail = (tmp_path / "streamlit.log").read_text(errors="replace")[-1500:]
            assert status == 200 and body, f"{url}: HTTP {status} (starlette pin?)\n{log_tail}"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
