"""tritonclient objects for an Endpoint, one per thread.

``tritonclient.http`` runs on gevent: a client used from two threads fails with greenlet errors, and
Streamlit runs every session in its own thread. So clients are cached per (thread, endpoint) and
never shared between threads.
"""

from __future__ import annotations

import atexit
import threading
import weakref

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from triton_kitchen.server import Endpoint

_local = threading.local()
_every_client: weakref.WeakSet = weakref.WeakSet()  # to close them before the interpreter tears grpc down

DEFAULT_TIMEOUT_S = 30.0


def _cache() -> dict:
    if not hasattr(_local, "clients"):
        _local.clients = {}
    return _local.clients


def http_client(endpoint: Endpoint, timeout: float = DEFAULT_TIMEOUT_S) -> httpclient.InferenceServerClient:
    """This thread's HTTP client for ``endpoint``."""
    key = ("http", endpoint.http_url, timeout)
    cache = _cache()
    if key not in cache:
        cache[key] = httpclient.InferenceServerClient(
            endpoint.http_url, connection_timeout=timeout, network_timeout=timeout
        )
        _every_client.add(cache[key])
    return cache[key]


def grpc_client(endpoint: Endpoint) -> grpcclient.InferenceServerClient:
    """This thread's gRPC client for ``endpoint``."""
    key = ("grpc", endpoint.grpc_url)
    cache = _cache()
    if key not in cache:
        cache[key] = grpcclient.InferenceServerClient(endpoint.grpc_url)
        _every_client.add(cache[key])
    return cache[key]


def client_for(protocol: str, endpoint: Endpoint):
    """``"http"`` or ``"grpc"`` -> (client, the tritonclient module that goes with it)."""
    if protocol.startswith("http"):
        return http_client(endpoint), httpclient
    if protocol == "grpc":
        return grpc_client(endpoint), grpcclient
    raise ValueError(f"unknown protocol {protocol!r}")


def close_thread_clients() -> None:
    """Close and forget this thread's clients (after a server restart, say)."""
    for client in _cache().values():
        try:
            client.close()
        except Exception:  # closing a client of a dead server may fail; nothing to keep
            pass
    _cache().clear()


@atexit.register
def _close_all() -> None:
    """Close every client at exit: a gRPC client collected after grpc's own teardown prints a traceback."""
    for client in list(_every_client):
        try:
            client.close()
        except Exception:  # shutting down anyway
            pass
