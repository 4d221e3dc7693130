"""A temporary config override of a lab model: reload it with a safe change of its loaded config, and always
restore the original afterwards.

:func:`overridden` holds the override for one server (one experiment at a time: the model is shared by every
session of the app), yields the config as loaded, and restores it on the way out, on error too.
:func:`load_model` reloads a lab model through the repository API (``POST /v2/repository/models/<m>/load`` with
``parameters.config``); :func:`check_override` refuses anything but dynamic batching and the instance group, so
no page can change a backend, load a Python model or upload code.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import CLASSIFIER, HFLIP
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError

MODEL = CLASSIFIER
MAX_INSTANCES = 4
MAX_QUEUE_DELAY_US = 100_000
LOAD_TIMEOUT_S = 180.0

# What a page may change, and on which models (security: nothing else of a config can be overridden,
# and the override never carries files, so no page can load a Python backend or upload code).
LAB_MODELS = (MODEL, HFLIP)  # hflip: chapter 10 reloads it while it is being called (model_control)
SAFE_FIELDS = ("dynamic_batching", "instance_group")
SAFE_KINDS = {"KIND_CPU", "KIND_GPU", "KIND_AUTO"}

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class BatchingError(KitchenError):
    """The repository API refused a load (message verbatim from Triton), or the lab is busy. ``code``:
    "load_failed", "no_control_api", "busy", "restore_failed", "bad_settings"."""

    source = "batching"
    default_code = "load_failed"

    def __init__(self, message: str, code: str = "load_failed") -> None:
        super().__init__(code, message)


def current_config(endpoint: Endpoint, model: str = MODEL, timeout: float = 10.0) -> dict:
    """The config ``model`` is loaded with (raises kserve.KServeError)."""
    return kserve.model_config(endpoint, model, timeout)


def check_override(base: dict, cfg: dict) -> None:
    """Refuse an override of the loaded config ``base`` that changes anything but dynamic batching and
    the instance group (a total of at most MAX_INSTANCES CPU/GPU instances): backend, platform,
    parameters, model files, agents, inputs and outputs stay exactly as loaded from our repository."""
    changed = sorted(k for k in set(base) | set(cfg) if base.get(k) != cfg.get(k) and k not in SAFE_FIELDS)
    if changed:
        raise BatchingError(f"the lab may not change {', '.join(changed)}", "bad_settings")
    db = cfg.get("dynamic_batching")
    if db is not None:
        if not isinstance(db, dict):
            raise BatchingError("dynamic_batching must be a message", "bad_settings")
        delay = int(db.get("max_queue_delay_microseconds", 0) or 0)
        if not 0 <= delay <= MAX_QUEUE_DELAY_US:
            raise BatchingError(
                f"max_queue_delay_microseconds must be 0..{MAX_QUEUE_DELAY_US}", "bad_settings"
            )
    groups = cfg.get("instance_group") or []
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise BatchingError("instance_group must be a list of groups", "bad_settings")
    total = sum(int(g.get("count", 1) or 1) for g in groups)
    if any(g.get("kind", "KIND_CPU") not in SAFE_KINDS for g in groups) or not 1 <= total <= MAX_INSTANCES:
        raise BatchingError(
            f"instance_group: kind CPU/GPU/AUTO, 1..{MAX_INSTANCES} instances", "bad_settings"
        )


def load_model(
    endpoint: Endpoint, model: str = MODEL, config: dict | None = None, timeout: float = LOAD_TIMEOUT_S
) -> None:
    """(Re)load ``model`` through the repository API; ``config`` overrides config.pbtxt. Only the lab's
    models, only a config (never files), and only when its fields are a safe change of the loaded one."""
    if model not in LAB_MODELS:
        raise BatchingError(f"the labs only reload {', '.join(LAB_MODELS)}", "bad_settings")
    if config is not None:
        if config.get("name", model) != model:
            raise BatchingError(f"the override names {config.get('name')!r}, not {model!r}", "bad_settings")
        try:
            loaded = current_config(endpoint, model)
        except kserve.KServeError as exc:
            raise BatchingError(f"load {model}: cannot read the loaded config: {exc.detail}") from exc
        check_override(loaded, config)
    try:
        kserve.load_model(endpoint, model, config=config, timeout=timeout)
    except kserve.KServeError as exc:
        code = "no_control_api" if exc.code == "no_control_api" else "load_failed"
        raise BatchingError(f"load {model}: {exc.detail}", code) from exc


def restore(endpoint: Endpoint, original: dict, model: str = MODEL) -> None:
    """Reload ``model`` from its config.pbtxt; if that does not give back ``original`` exactly (someone loaded
    it with an override before us, or Triton kept ours), load ``original`` itself."""
    errors = []
    try:
        if current_config(endpoint, model) == original:
            return  # nothing was changed (the override was refused), or it is already back
    except kserve.KServeError as exc:
        errors.append(str(exc))
    try:
        load_model(endpoint, model)
        # the whole config, not only the batching lab's fields: a load without a config keeps the last
        # override when the files did not change (Triton 2.51), priority levels and queue policies included
        if current_config(endpoint, model) == original:
            return
    except (BatchingError, kserve.KServeError) as exc:
        errors.append(str(exc))
    try:
        load_model(endpoint, model, original)
    except BatchingError as exc:
        errors.append(str(exc))
        raise BatchingError(
            "could not restore the original config: " + "; ".join(errors), "restore_failed"
        ) from exc


@contextmanager
def overridden(endpoint: Endpoint, model: str = MODEL) -> Iterator[dict]:
    """Hold the lab for this server, yield the original config, and restore it on the way out —
    after success, error, stop, or a Streamlit rerun alike."""
    with _locks_guard:
        lock = _locks.setdefault(endpoint.http_url, threading.Lock())
    if not lock.acquire(blocking=False):
        raise BatchingError("another batching experiment is running on this server", "busy")
    try:
        original = current_config(endpoint, model)
        try:
            yield original
        finally:
            restore(endpoint, original, model)
    finally:
        lock.release()
