"""tritonclient clients for inference calls, owned and closed.

* gRPC: one app-wide client per address (:func:`grpc_client`). ``tritonclient.grpc`` is thread-safe, and
  Streamlit runs every *script run* on a new short-lived thread, so a per-thread cache would make (and
  leak) a client per run. :func:`close_all` closes them (a server restart, the end of the process).
* HTTP: ``tritonclient.http`` runs on gevent, and a client used or closed from another thread fails.
  ``with clients.http(endpoint) as client:`` makes one and closes it on the same thread.

Every call that is not an inference (health, metadata, config, statistics, repository, trace) goes
through :mod:`triton_kitchen.core.kserve`, not through these clients.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from triton_kitchen.core.endpoint import Endpoint

DEFAULT_TIMEOUT_S = 30.0

_grpc_clients: dict[str, grpcclient.InferenceServerClient] = {}
_lock = threading.Lock()


def grpc_client(endpoint: Endpoint) -> grpcclient.InferenceServerClient:
    """The app-wide gRPC client for ``endpoint``'s gRPC address (shared by every thread)."""
    with _lock:
        client = _grpc_clients.get(endpoint.grpc_url)
        if client is None:
            client = _grpc_clients[endpoint.grpc_url] = grpcclient.InferenceServerClient(endpoint.grpc_url)
        return client


@contextmanager
def http(
    endpoint: Endpoint, timeout: float = DEFAULT_TIMEOUT_S
) -> Iterator[httpclient.InferenceServerClient]:
    """A new HTTP inference client for this block only, closed at its end (on this thread)."""
    client = httpclient.InferenceServerClient(
        endpoint.http_url, connection_timeout=timeout, network_timeout=timeout
    )
    try:
        yield client
    finally:
        client.close()


def _close(clients: list) -> None:
    for client in clients:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing a client of a dead server may fail; nothing to keep
            pass


def close_all() -> None:
    """Close and forget every shared gRPC client: after a server restart, and at exit (a gRPC client
    collected after grpc's own teardown prints a traceback)."""
    with _lock:
        shared = list(_grpc_clients.values())
        _grpc_clients.clear()
    _close(shared)


atexit.register(close_all)
