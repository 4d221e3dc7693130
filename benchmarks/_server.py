"""The servers the benchmarks run: Triton (a running one named by --url, or the embedded one, started and
stopped here) and the Streamlit app."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.server import EmbeddedServer


def add_server_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--url", help="HTTP host:port of a running server (default: start the embedded one)")
    ap.add_argument("--grpc-url", help="gRPC host:port (default: the HTTP host, port 8001)")


@contextmanager
def server_for(args: argparse.Namespace) -> Iterator[Endpoint]:
    """The endpoint to measure (``endpoint.embedded`` says which kind); an embedded server stops on exit."""
    if args.url:
        yield Endpoint.remote(args.url, args.grpc_url or "")
        return
    server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
    try:
        yield server.start(timeout=180)
    finally:
        server.stop()


ROOT = Path(__file__).resolve().parents[1]


def start_streamlit(script: str, port: int, log: Path, *options: str) -> subprocess.Popen:
    """`streamlit run SCRIPT` from the project root (headless, on PORT, its output in LOG), returned once its
    health check answers."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        "--server.headless=true",
        f"--server.port={port}",
    ]
    proc = subprocess.Popen([*cmd, *options], cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not come up (see {log})")
