"""The report scripts' server: a running one named by --url, or the embedded one, started and stopped here."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from triton_kitchen.server import EmbeddedServer, Endpoint


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
