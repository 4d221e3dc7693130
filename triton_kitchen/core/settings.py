"""The environment variables the app reads, in one place: :class:`Settings` has one field per variable, with its
name, default and meaning, and :func:`settings` reads them all from the environment at the moment it is called.

Nothing here is cached: a test that sets a variable (``monkeypatch.setenv``) sees it at the next call, and so
does a process whose environment changed. An empty variable means the same as an unset one. The bottom layer:
it imports nothing of the project.

    settings().teacher_token                      # "" unless TRITON_KITCHEN_TEACHER_TOKEN is set
    [(v.env, v.default, v.meaning) for v in variables()]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

HTTP_URL_ENV = "TRITON_HTTP_URL"
GRPC_URL_ENV = "TRITON_GRPC_URL"
METRICS_URL_ENV = "TRITON_METRICS_URL"
LAB_WORKERS_ENV = "TRITON_KITCHEN_LAB_WORKERS"
CACHE_ENV = "TRITON_KITCHEN_CACHE"
DATABASE_URL_ENV = "TRITON_KITCHEN_DATABASE_URL"
REPOSITORY_ROOT_ENV = "TRITON_KITCHEN_REPOSITORY_ROOT"
TEACHER_TOKEN_ENV = "TRITON_KITCHEN_TEACHER_TOKEN"
AUTO_RESTART_ENV = "TRITON_KITCHEN_AUTO_RESTART"
LOG_LEVEL_ENV = "TRITON_KITCHEN_LOG_LEVEL"
KEY_ENV = "TRITON_KITCHEN_KEY"


def _default_workers() -> int:
    return max(4, 4 * (os.cpu_count() or 1))


def _workers(raw: str) -> int:
    raw = raw.strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else _default_workers()


def _switch(raw: str) -> bool:
    return raw.strip().lower() not in ("0", "false", "no", "off")


def _default_cache() -> Path:
    return Path.home() / ".cache" / "triton-kitchen"


def _var(env: str, default: object, meaning: str, parse: Callable[[str], object] = str.strip):
    """A field read from ``env``: ``parse(raw)`` when the variable is set and not empty, else ``default`` (a
    function is called for it then: a default that depends on the machine is worked out at that call too)."""
    metadata = {"env": env, "meaning": meaning, "parse": parse}
    if callable(default):
        return field(default_factory=default, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Settings:
    """What the environment says, one field per variable (see :func:`variables` for name, default and meaning)."""

    http_url: str = _var(
        HTTP_URL_ENV,
        "",
        "A remote Triton's HTTP address (host:port, default port 8000). With it or TRITON_GRPC_URL set the app "
        "uses that server instead of starting its own; the one not set is the other's host on Triton's default "
        "port.",
    )
    grpc_url: str = _var(GRPC_URL_ENV, "", "A remote Triton's gRPC address (host:port, default port 8001).")
    metrics_url: str = _var(
        METRICS_URL_ENV,
        "",
        "A remote Triton's metrics address, where it is not the HTTP host's port 8002.",
    )
    key: str = _var(
        KEY_ENV,
        "",
        "The key of a remote Triton's restricted repository and trace APIs (sent as the triton-kitchen-key header "
        "to every remote server): the one docker-compose.gpu.yml gives the server, or the one `serve` prints.",
        str,
    )
    lab_workers: int = _var(
        LAB_WORKERS_ENV,
        _default_workers,
        "Workers the lab runs of the whole app share (a positive whole number; default 4 per CPU core, at least 4).",
        _workers,
    )
    cache: Path = _var(
        CACHE_ENV,
        _default_cache,
        "The folder for the embedded server's copy, its logs and traces, and the default class database.",
        Path,
    )
    database_url: str = _var(
        DATABASE_URL_ENV,
        "",
        "The class database's SQLAlchemy URL (e.g. postgresql://user@host/db); default: SQLite classroom.db "
        "in the cache folder.",
        str,
    )
    repository_root: str = _var(
        REPOSITORY_ROOT_ENV,
        "",
        "The folder whose subfolders a browser user may open as a model repository; default: the app's folder.",
        str,
    )
    teacher_token: str = _var(
        TEACHER_TOKEN_ENV,
        "",
        "The teacher's token: set, the app serves a class, and only a session that opened ?teacher=<token> has "
        "the server's controls and the teacher's desk; unset, the browser on the app's own machine has them.",
        str,
    )
    auto_restart: bool = _var(
        AUTO_RESTART_ENV,
        True,
        "Restart a dead embedded server without being asked; 0, false, no or off turn it off.",
        _switch,
    )
    log_level: str = _var(
        LOG_LEVEL_ENV,
        "INFO",
        "The level of the app's own loggers (triton_kitchen, ui): DEBUG, INFO, WARNING, ERROR.",
        str.upper,
    )


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, the field of :class:`Settings` it fills, its default and meaning."""

    env: str
    field: str
    default: object
    meaning: str


def variables() -> list[Variable]:
    """Every variable :func:`settings` reads, in the order of :class:`Settings`' fields (a default that depends
    on the machine, worked out on this one)."""
    return [
        Variable(
            f.metadata["env"],
            f.name,
            f.default_factory() if f.default is MISSING else f.default,
            f.metadata["meaning"],
        )
        for f in fields(Settings)
    ]


def settings() -> Settings:
    """The environment's settings now (read at each call, never cached)."""
    values = {}
    for f in fields(Settings):
        raw = os.environ.get(f.metadata["env"], "")
        if raw:
            values[f.name] = f.metadata["parse"](raw)
    return Settings(**values)
