"""Where a Triton server answers: an :class:`Endpoint` (HTTP and gRPC ``host:port``, headers) and URL helpers.

The bottom layer: it imports nothing of the project but :mod:`~triton_kitchen.core.settings`, so every client
module can use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triton_kitchen.core.settings import settings

DEFAULT_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002}
# The header that unlocks a restricted repository or trace API (tritonserver --http-restricted-api=...:<header>=<key>)
RESTRICTED_HEADER = "triton-kitchen-key"


def remote_headers() -> dict[str, str]:
    """What the app sends a remote server besides each request: the restricted APIs' key, when
    ``TRITON_KITCHEN_KEY`` gives one (``serve`` and docker-compose.gpu.yml restrict the repository API to it)."""
    key = settings().key
    return {RESTRICTED_HEADER: key} if key else {}


@dataclass
class Endpoint:
    """Where a Triton server answers: ``host:port`` for HTTP and gRPC, plus how we got there."""

    http_url: str
    grpc_url: str
    embedded: bool = False
    metrics_url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> Endpoint | None:
        """A remote server from ``TRITON_HTTP_URL`` / ``TRITON_GRPC_URL`` (and ``TRITON_METRICS_URL``, for a
        metrics port that is not the HTTP host's 8002), or None when neither of the first two is set."""
        env = settings()
        if not env.http_url and not env.grpc_url:
            return None
        return cls.remote(env.http_url, env.grpc_url, env.metrics_url)

    @classmethod
    def remote(cls, http_url: str = "", grpc_url: str = "", metrics_url: str = "") -> Endpoint:
        """A remote server; a URL not given is the other one's host on Triton's default port (the metrics
        URL: left None, read as the HTTP host's 8002 by ``metrics.address_of``). Its headers carry the
        restricted APIs' key from ``TRITON_KITCHEN_KEY`` (:func:`remote_headers`)."""
        http_url, grpc_url, metrics_url = http_url.strip(), grpc_url.strip(), metrics_url.strip()
        http = with_port(http_url, "http") if http_url else _swap_port(grpc_url, DEFAULT_PORTS["http"])
        grpc = with_port(grpc_url, "grpc") if grpc_url else _swap_port(http_url, DEFAULT_PORTS["grpc"])
        metrics = with_port(metrics_url, "metrics") if metrics_url else None
        return cls(
            http_url=http, grpc_url=grpc, embedded=False, metrics_url=metrics, headers=remote_headers()
        )


def host_port(url: str) -> str:
    """``http://host:8000/`` -> ``host:8000``: what the clients want (scheme and path dropped)."""
    return url.strip().split("://", 1)[-1].split("/", 1)[0].strip()


def with_port(url: str, kind: str) -> str:
    """``host:port`` of ``url``, on Triton's default port for ``kind`` ("http", "grpc", "metrics") when it names
    none: ``gpu-box`` -> ``gpu-box:8002`` for metrics, as Triton listens unless told otherwise. A scheme does not
    choose the port (``http://gpu-box/`` is ``gpu-box:8000``, not 80): the addresses are a Triton server's ports."""
    address = host_port(url)
    if not address:
        return address
    has_port = "]:" in address if address.startswith("[") else ":" in address  # [::1]:8000 (IPv6)
    return address if has_port else f"{address}:{DEFAULT_PORTS[kind]}"


def _swap_port(url: str, port: int) -> str:
    host = with_port(url, "http").rsplit(":", 1)[0]  # a port added first: "[::1]" keeps its closing bracket
    return f"{host}:{port}"


def split_host_port(url: str) -> tuple[str, int]:
    """``http://host:8000/`` -> ``("host", 8000)``; raises ValueError without a port."""
    url = host_port(url)
    host, _, port = url.rpartition(":")
    if not host:
        raise ValueError(f"address {url!r} needs host:port")
    return host.strip("[]"), int(port)
