"""Models loaded on first use: the drills' models are not loaded when the app's server starts, but when a drill
first sends to them.

The embedded server runs in explicit model-control mode and starts with :func:`loaded_at_start` (every model of
its repository but :data:`catalog.LOADED_ON_FIRST_USE`). A drill calls :func:`ensure_loaded` before its first
request: when the model is not ready, Triton is asked to load it through the repository API (with the endpoint's
key header, which unlocks that API on the app's server) and the call returns once the model is ready. Callers in one
app process that ask for the same model at once share one load.

    on_demand.ensure_loaded(endpoint, catalog.SHAPES_DRILL)
"""

from __future__ import annotations

import os
import threading
import time

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import DEFAULT_REPOSITORY

LOAD_TIMEOUT_S = 60.0  # a drill model loads in about a second; a busy two-core machine takes longer

_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


class OnDemandError(KitchenError):
    """A model that loads on first use could not be loaded: ``no_control_api`` (this server does not let the app
    load models: a remote without the key, or not in explicit model-control mode), ``not_in_repository``,
    ``load_failed`` (Triton's words in the detail), ``timeout``."""

    source = "on_demand"
    default_code = "load_failed"


def loaded_at_start(repo: str | os.PathLike = DEFAULT_REPOSITORY) -> list[str]:
    """The models the app's server loads when it starts: every model of ``repo`` but those loaded on first use."""
    return catalog.model_names(repo, leave_out=catalog.LOADED_ON_FIRST_USE)


def _lock(endpoint: Endpoint, model: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((endpoint.http_url, model), threading.Lock())


def _in_repository(endpoint: Endpoint, model: str) -> bool | None:
    """Whether the server's repository has ``model``; None when its index cannot be read."""
    try:
        return any(m.get("name") == model for m in kserve.repository_index(endpoint))
    except kserve.KServeError:
        return None


def ensure_loaded(endpoint: Endpoint, model: str, timeout: float = LOAD_TIMEOUT_S) -> bool:
    """Make ``model`` ready on ``endpoint``: at once when it is; else load it and wait until it is ready.
    Returns True when this call loaded it. Raises :class:`OnDemandError` when the server refuses."""
    if kserve.model_ready(endpoint, model):
        return False
    deadline = time.monotonic() + timeout
    with _lock(endpoint, model):
        if kserve.model_ready(endpoint, model):  # another caller loaded it while this one waited
            return False
        try:
            kserve.load_model(endpoint, model, timeout=max(1.0, deadline - time.monotonic()))
        except kserve.KServeError as exc:
            if exc.code == "no_control_api":
                raise OnDemandError("no_control_api", f"{model}: {exc.detail}") from exc
            if exc.code == "timeout":
                raise OnDemandError("timeout", f"{model}: {exc.detail}") from exc
            if exc.code == "connection":
                raise
            if _in_repository(endpoint, model) is False:
                raise OnDemandError("not_in_repository", f"{model}: {exc.detail}") from exc
            raise OnDemandError("load_failed", f"{model}: {exc.detail}") from exc
        while not kserve.model_ready(endpoint, model):  # Triton answers the load once the model is ready
            if time.monotonic() > deadline:
                raise OnDemandError("timeout", f"{model}: loaded, but not ready after {timeout:g} s")
            time.sleep(0.05)
        return True
