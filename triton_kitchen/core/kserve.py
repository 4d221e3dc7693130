"""Triton's KServe-v2 REST API, every call the app makes that is not a timed inference.

Health, metadata, config, statistics, the repository API (index, load with a config override or files,
unload), trace settings and system shared-memory regions. One ``http.client`` connection per call: thread-safe,
no gevent (``tritonclient.http`` runs on gevent and fails when a client crosses threads, and Streamlit runs each
script run on its own thread).

Every function takes ``target``: an :class:`~triton_kitchen.core.endpoint.Endpoint` (its HTTP address; its
headers unlock the restricted repository and trace APIs of the embedded server) or an HTTP ``host:port``.
"""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any

from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.core.errors import KitchenError

DEFAULT_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 180.0

# Triton's words when a client may not use the repository (model control) API: the API is restricted to a
# header this client lacks (--http-restricted-api), or the server is not in explicit model-control mode.
_CONTROL_REFUSALS = ("api is restricted", "load / unload is not allowed")


class KServeError(KitchenError):
    """A REST call failed. ``code``: ``connection`` (nothing answered), ``timeout``, ``http`` (Triton answered
    with an error: ``status`` and Triton's message in ``detail``), ``no_control_api`` (the repository or
    trace API is closed to this client), ``not_json``."""

    default_code = "http"

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(code, detail)
        self.status = status


def control_api_refused(message: str) -> bool:
    """True when Triton's error ``message`` says this client may not load or unload models at all."""
    text = message.lower()
    return any(r in text for r in _CONTROL_REFUSALS)


def _address(target: Endpoint | str) -> str:
    return target.http_url if isinstance(target, Endpoint) else target


def _headers(target: Endpoint | str, headers: dict[str, str] | None) -> dict[str, str]:
    base = dict(target.headers) if isinstance(target, Endpoint) else {}
    return {**base, **(headers or {})}


def request(
    target: Endpoint | str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[int, bytes]:
    """One request; returns (HTTP status, body bytes). Raises KServeError only when nothing answered."""
    host, port = split_host_port(_address(target))
    sent = {**_headers(target, headers)}
    payload = None
    if body is not None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=payload, headers=sent)
        resp = conn.getresponse()
        return resp.status, resp.read()
    except TimeoutError as exc:
        raise KServeError("timeout", f"{method} {path}: timed out after {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise KServeError("connection", f"{method} {path}: {type(exc).__name__}: {exc}") from exc
    finally:
        conn.close()


def _error_text(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("error", "")) or raw.decode(errors="replace")
    except (ValueError, AttributeError):
        return raw.decode(errors="replace")


def call_json(
    target: Endpoint | str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Any:
    """A request whose answer is JSON; a non-200 answer raises KServeError with Triton's message."""
    status, raw = request(target, method, path, body, headers, timeout)
    if status != 200:
        message = _error_text(raw)
        code = "no_control_api" if control_api_refused(message) else "http"
        raise KServeError(code, f"{method} {path}: HTTP {status}: {message}", status)
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise KServeError(
            "not_json", f"{method} {path}: the answer is not JSON: {raw[:200]!r}", status
        ) from exc


def get_json(target: Endpoint | str, path: str, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    return call_json(target, "GET", path, timeout=timeout)


# -- health ----------------------------------------------------------------------------------------
def _ok(target: Endpoint | str, path: str, timeout: float) -> bool:
    try:
        return request(target, "GET", path, timeout=timeout)[0] == 200
    except (KServeError, ValueError):
        return False  # refused, timed out, a bad address, or not HTTP at all (a gRPC port answers HTTP/2)


def live(target: Endpoint | str, timeout: float = 1.0) -> bool:
    """True when a KServe-v2 server answers ``/v2/health/live``: the app's one meaning of "the server is up".

    Not ``/v2/health/ready``: the embedded server runs with strict readiness, so one unloaded model (a batching
    lab reload, say) makes the whole server "not ready" while it answers every other model."""
    return _ok(target, "/v2/health/live", timeout)


def ready(target: Endpoint | str, timeout: float = 1.0) -> bool:
    """True when the server says it is ready (with strict readiness: every model loaded)."""
    return _ok(target, "/v2/health/ready", timeout)


def model_ready(target: Endpoint | str, model: str, timeout: float = 1.0) -> bool:
    return _ok(target, f"/v2/models/{model}/ready", timeout)


# -- metadata, config, statistics ------------------------------------------------------------------
def server_metadata(target: Endpoint | str, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    return get_json(target, "/v2", timeout)


def model_metadata(target: Endpoint | str, model: str, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    return get_json(target, f"/v2/models/{model}", timeout)


def model_config(target: Endpoint | str, model: str, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    """The config Triton loaded (defaults filled in), as JSON."""
    return get_json(target, f"/v2/models/{model}/config", timeout)


def statistics(target: Endpoint | str, model: str = "", timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    """``/v2/models[/<model>]/stats``: every model's statistics, or one model's (all its versions)."""
    path = f"/v2/models/{model}/stats" if model else "/v2/models/stats"
    return get_json(target, path, timeout)


# -- the repository API ----------------------------------------------------------------------------
def repository_index(
    target: Endpoint | str, headers: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT_S
) -> list[dict]:
    """Every model of the repository with its state (``name``, ``version``, ``state``, ``reason``)."""
    return call_json(target, "POST", "/v2/repository/index", {}, headers, timeout)


def load_model(
    target: Endpoint | str,
    name: str,
    config: dict | str | None = None,
    files: dict[str, bytes] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = LOAD_TIMEOUT_S,
) -> None:
    """(Re)load ``name``. ``config`` (a dict or JSON text) overrides its config.pbtxt; ``files`` maps
    ``1/model.onnx``-style paths to contents (Triton then loads from them, not from the repository)."""
    parameters: dict[str, str] = {}
    if config is not None:
        parameters["config"] = config if isinstance(config, str) else json.dumps(config)
    for path, content in (files or {}).items():
        parameters[f"file:{path}"] = base64.b64encode(content).decode()
    body = {"parameters": parameters} if parameters else {}
    call_json(target, "POST", f"/v2/repository/models/{name}/load", body, headers, timeout)


def unload_model(
    target: Endpoint | str,
    name: str,
    unload_dependents: bool = False,
    headers: dict[str, str] | None = None,
    timeout: float = LOAD_TIMEOUT_S,
) -> None:
    body = {"parameters": {"unload_dependents": True}} if unload_dependents else {}
    call_json(target, "POST", f"/v2/repository/models/{name}/unload", body, headers, timeout)


# -- trace settings --------------------------------------------------------------------------------
def _trace_path(model: str | None) -> str:
    return f"/v2/models/{model}/trace/setting" if model else "/v2/trace/setting"


def trace_settings(
    target: Endpoint | str,
    model: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> dict:
    """The trace settings in force (the model's, or the server's); values as Triton sends them."""
    return call_json(target, "GET", _trace_path(model), None, headers, timeout)


def update_trace_settings(
    target: Endpoint | str,
    settings: dict[str, Any],
    model: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> dict:
    """Change trace settings (``{"trace_level": ["TIMESTAMPS"], "trace_rate": "1", ...}``; ``None`` as a value
    clears a model's own setting); returns the settings now in force."""
    return call_json(target, "POST", _trace_path(model), settings, headers, timeout)


# -- system shared memory --------------------------------------------------------------------------
def register_system_shm(
    target: Endpoint | str,
    name: str,
    key: str,
    byte_size: int,
    offset: int = 0,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Tell the server about a POSIX shared-memory region (``key``: its ``/name`` in /dev/shm) as ``name``."""
    body = {"key": key, "offset": offset, "byte_size": byte_size}
    call_json(target, "POST", f"/v2/systemsharedmemory/region/{name}/register", body, None, timeout)


def unregister_system_shm(target: Endpoint | str, name: str = "", timeout: float = DEFAULT_TIMEOUT_S) -> None:
    """Make the server let go of region ``name`` (every region when empty)."""
    path = f"/v2/systemsharedmemory/region/{name}/unregister" if name else "/v2/systemsharedmemory/unregister"
    call_json(target, "POST", path, {}, None, timeout)


def system_shm_status(target: Endpoint | str, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict]:
    """The system shared-memory regions the server has registered (``name``, ``key``, ``offset``, ``byte_size``)."""
    return get_json(target, "/v2/systemsharedmemory/status", timeout) or []
