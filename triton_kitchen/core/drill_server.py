"""A small tritonserver of a drill's own, on drill_repository/ (free ports, stopped when the run ends), and the
inputs of its ``slow_drill`` model. Drills that kill a stub, cancel requests or start a server that must fail use
it, so the class's server and models are never touched (chapters 7 and 10).

    with own_server([SLOW_DRILL]) as srv:
        client = grpcclient.InferenceServerClient(srv.endpoint.grpc_url)
        client.infer(SLOW_DRILL, slow_inputs(800))   # sleeps 800 ms in the model

The block ends before its server has finished stopping: a tritonserver's graceful exit takes about 3 s (on
SIGTERM it unloads its models, and checks once a second whether any is still live), and nothing of the drill's
result waits on it. The stop goes on in a thread of its own; a drill that needs the server gone when the block
ends (to show what a client sees from a stopped server) asks for ``wait_for_stop=True``. Stops still under way
when the process exits are waited for then (:func:`finish_stopping`), so no stub's shared memory is left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

from triton_kitchen.core.catalog import DRILL_REPOSITORY
from triton_kitchen.core.server import EmbeddedServer

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0
STOP_WAIT_S = 30.0  # at the process's exit: how long the stops still under way are waited for

_stopping: set[threading.Thread] = set()
_stopping_lock = threading.Lock()


def _stop(srv: EmbeddedServer) -> None:
    try:
        srv.stop()
    finally:
        with _stopping_lock:
            _stopping.discard(threading.current_thread())


def stop_in_background(srv: EmbeddedServer) -> threading.Thread:
    """Stop ``srv`` (gracefully: Triton unloads its models, each stub removes its shared memory) in a thread."""
    th = threading.Thread(target=_stop, args=(srv,), name=f"drill-server-stop-{srv.pid}", daemon=True)
    with _stopping_lock:
        _stopping.add(th)
    th.start()
    return th


def finish_stopping(timeout: float = STOP_WAIT_S) -> int:
    """Wait for the drill servers still stopping (at most ``timeout`` seconds in all); how many were waited for."""
    with _stopping_lock:
        pending = list(_stopping)
    for th in pending:
        th.join(timeout)
    return len(pending)


atexit.register(finish_stopping)


@contextlib.contextmanager
def own_server(
    load: list[str],
    extra_args: tuple[str, ...] = (),
    repo: Path = DRILL_REPOSITORY,
    wait_for_stop: bool = False,
) -> Iterator[EmbeddedServer]:
    """A tritonserver of this run's own on ``repo`` (explicit mode, loading ``load``), stopped and its folder
    removed when the block ends: in the background (the block does not wait for Triton's exit) unless
    ``wait_for_stop``. Raises ServerStartError (with the log's errors) when it does not start."""
    srv = EmbeddedServer(
        repo=repo,
        http_port=0,
        grpc_port=0,
        metrics_port=0,
        load_models=load,
        extra_args=extra_args,
        build_models=False,
    )
    try:
        srv.start(timeout=START_TIMEOUT_S)
        try:
            yield srv
        except Exception as exc:
            # the drill failed because its server is gone: say so, and why (stop() removes the log)
            if _died(srv):
                note = f"the drill's own tritonserver stopped during the drill; its log:\n{_last_words(srv)}"
                exc.add_note(note)
                log.warning("%s (%s)", note, exc)
            raise
    finally:
        if wait_for_stop or not srv.running:  # never started or already died: nothing to wait for
            srv.stop()
        else:
            stop_in_background(srv)


def _died(srv: EmbeddedServer, wait_s: float = 1.0) -> bool:
    """Whether the server died; its supervisor exits a moment after tritonserver, so wait up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while srv.running and time.monotonic() < deadline:
        time.sleep(0.05)
    return srv.died


def _last_words(srv: EmbeddedServer) -> str:
    """The end of a stopped server's log: its error lines and its last lines (a signal or an abort shows there)."""
    return f"{srv.log_errors(5)}\n--- log tail ---\n{srv.log_tail(12)}"


def slow_inputs(ms: int, poll: bool = False, module=grpcclient) -> list:
    """slow_drill's two inputs: sleep ``ms`` milliseconds; with ``poll``, ask request.is_cancelled() every
    10 ms and stop early. ``module``: tritonclient.grpc or tritonclient.http."""
    a = module.InferInput("MS", [1, 1], "INT32")
    a.set_data_from_numpy(np.array([[ms]], dtype=np.int32))
    b = module.InferInput("POLL", [1, 1], "BOOL")
    b.set_data_from_numpy(np.array([[poll]], dtype=bool))
    return [a, b]
