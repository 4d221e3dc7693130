"""The doctor's look at the server itself (:mod:`triton_kitchen.tools.doctor`): whether the address is Triton at
all, its version, extensions and models (``GET /v2``, the repository index or, where that API is restricted, the
statistics), its gRPC port, and whether it takes a client's shared memory (a one-byte region registered and
unregistered, only when the server is on this host: another host cannot map this machine's memory).
"""

from __future__ import annotations

import socket

import tritonclient.grpc as grpcclient

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint, host_port, split_host_port
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.versions import TritonVersion, VersionError
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.protocols import shm as shm_protocol

SHM_EXTENSION = "system_shared_memory"


class DoctorError(KitchenError):
    """The doctor could not examine the server at all: ``code`` is a ``[doctor]`` message key
    (``not_reachable``, ``not_triton``, ``slow_server``, ``no_model``, ``model_unusable``)."""

    default_code = "doctor"
    source = "doctor"  # its messages: error.doctor_<code> in ui.toml


def check_address(http_url: str) -> None:
    """Raise :class:`DoctorError` ``bad_url`` unless ``http_url`` reads as ``host:port`` (a port in 1..65535, a
    host without spaces): what was typed is said back before anything is sent."""
    try:
        host, port = split_host_port(http_url)
    except ValueError:
        host, port = "", 0
    if not host or any(ch.isspace() for ch in host) or not 0 < port < 65536:
        raise DoctorError("bad_url", f"{http_url!r} is not host:port")


def is_local(address: str) -> bool:
    """Whether ``host:port`` is this machine (loopback, or one of its own addresses)."""
    try:
        host, _ = split_host_port(address)
    except ValueError:
        return False
    if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
        return True
    try:
        theirs = {ai[4][0] for ai in socket.getaddrinfo(host, None)}
        ours = {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return False
    return any(a.startswith("127.") or a == "::1" for a in theirs) or bool(theirs & ours)


def server_facts(endpoint: Endpoint, timeout_s: float) -> dict:
    """Version, extensions and models of the server at ``endpoint.http_url``; raises :class:`DoctorError` when
    nothing answers, the answer is not Triton's, or it comes too late."""
    url = endpoint.http_url
    try:
        meta = kserve.server_metadata(endpoint, timeout=timeout_s)
    except kserve.KServeError as exc:
        if exc.code == "timeout":
            raise DoctorError("slow_server", f"{url} did not answer GET /v2 within {timeout_s:g} s") from None
        if exc.code == "connection":
            raise DoctorError("not_reachable", f"nothing answers HTTP at {url}: {exc.detail}") from None
        raise DoctorError("not_triton", f"{url} is not Triton's HTTP API: {exc.detail}") from None
    if not isinstance(meta, dict) or "version" not in meta or "extensions" not in meta:
        raise DoctorError("not_triton", f"{url} answers GET /v2, but not as Triton: {str(meta)[:200]}")
    try:
        version = TritonVersion.parse(str(meta["version"]))
        release = version.release
    except VersionError:
        version, release = None, "?"
    models: list[str] = []
    try:
        index = kserve.repository_index(endpoint, timeout=timeout_s)
        models = sorted({m["name"] for m in index if m.get("state") == "READY"})
    except kserve.KServeError:  # restricted repository API: the statistics list every loaded model
        try:
            stats = kserve.statistics(endpoint, timeout=timeout_s)
            models = sorted({m.get("name", "") for m in stats.get("model_stats", [])} - {""})
        except kserve.KServeError:
            models = []
    return {
        "name": meta.get("name", ""),
        "version": str(version) if version else str(meta["version"]),
        "release": release,
        "extensions": list(meta.get("extensions", [])),
        "models": models,
        "local": is_local(url),
    }


def grpc_address(http_url: str, given: str | None) -> str | None:
    """The gRPC ``host:port`` of the server at ``http_url``: ``given``, else the port above the HTTP one, else
    Triton's 8001 on its host; each checked to be the same server (their statistics agree; ``given`` is also taken
    when it answers as Triton's gRPC and the statistics cannot be compared). None: no gRPC."""
    host, port = split_host_port(http_url)
    candidates = [host_port(given)] if given else [f"{host}:{port + 1}", f"{host}:8001"]
    for cand in dict.fromkeys(candidates):
        if server_stats.statistics_address(cand, [http_url], timeout=3.0) is not None:
            return cand
    if (
        given
    ):  # named by the engineer: taken when it answers as Triton's gRPC, even without statistics to compare
        client = grpcclient.InferenceServerClient(candidates[0])
        try:
            if client.is_server_live(client_timeout=3.0):
                return candidates[0]
        except Exception:  # noqa: BLE001 - refused, unreachable, not gRPC: not this server's gRPC port
            pass
        finally:
            client.close()
    return None


def client_shm(endpoint: Endpoint, facts: dict, timeout_s: float) -> tuple[str, str, str]:
    """(state, Triton's refusal, the failure): state ``allowed``, ``refused``, ``not_local`` or ``not_offered``;
    the refusal is Triton's words when it refused the region, the failure what went wrong when registering failed
    otherwise (each "" when not)."""
    if SHM_EXTENSION not in facts["extensions"]:
        return "not_offered", "", ""
    if not facts["local"]:
        return "not_local", "", ""
    try:
        refused = shm_protocol.refusal(endpoint, "http-shm", timeout_s=min(5.0, timeout_s))
    except Exception as exc:  # noqa: BLE001 - any failure means we cannot use it; say why
        return "refused", "", str(exc)[:200]
    if refused:
        return "refused", refused, ""
    return "allowed", "", ""
