"""Live capture from the embedded server: switch tracing on for one model, send, find the request's trace.

Trace settings go through :mod:`triton_kitchen.core.kserve` (the restricted trace API needs the embedded
server's headers, which an :class:`~triton_kitchen.core.endpoint.Endpoint` carries). The trace file is read
from disk, so this works only where the server's files are (``local``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools.trace.model import RequestTimeline, StepTrace, TraceError
from triton_kitchen.tools.trace.parse import parse_records, read_json_array, trace_files

Target = Endpoint | str  # kserve's: an Endpoint, or an HTTP host:port

# One capture at a time: tracing is switched on and off per model, app-wide.
capture_lock = threading.Lock()


def as_target(target) -> Target:
    """An Endpoint or ``host:port``, as kserve takes them."""
    if isinstance(target, Endpoint | str):
        return target
    raise TypeError(f"expected an Endpoint or host:port, got {type(target).__name__}")


def trace_settings(target, model: str | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The trace settings in force for ``model`` (the server's when None)."""
    return kserve.trace_settings(as_target(target), model, headers)


def capture(
    target,
    model: str,
    send: Callable[[], Any],
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    local: bool = True,
) -> tuple[Any, RequestTimeline]:
    """Trace one request: switch TIMESTAMPS tracing on for ``model``, call ``send()``, find its trace.

    ``target`` is the server's :class:`Endpoint` (its headers unlock the restricted trace API; ``headers``
    add to them); ``send`` makes the request over any protocol and returns its result. The model's trace
    settings are put back as they were afterwards (off, unless someone traces it on purpose). Returns
    ``(send()'s result, timeline)``; raises TraceError if the trace file is out of reach or no
    matching trace appears within ``timeout_s``. The timeline gets the client's send/receive instants.
    """
    result, found = capture_many(target, model, send, 1, headers, timeout_s, local)
    return result, found[0]


def capture_many(
    target,
    model: str,
    send: Callable[[], Any],
    expect: int,
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    local: bool = True,
) -> tuple[Any, list[RequestTimeline]]:
    """Like :func:`capture` for a ``send`` that makes ``expect`` requests to ``model`` (concurrent ones, say)."""
    target = as_target(target)
    with capture_lock:
        settings = kserve.trace_settings(target, model, headers)
        base = Path(str(settings.get("trace_file") or ""))
        if not local or not str(base) or not base.parent.is_dir():
            raise TraceError("not_local", f"trace file {base} is not readable from here")
        known = file_signatures(base)
        on = {"trace_level": ["TIMESTAMPS"], "trace_rate": "1", "log_frequency": "1", "trace_count": "-1"}
        # what was in force before, put back afterwards (a teacher's own tracing stays as it was)
        before = {k: settings[k] for k in on if settings.get(k) not in (None, "", [])}
        before.setdefault("trace_level", ["OFF"])
        if all(before.get(k) == v for k, v in on.items()):  # ours, left by a capture that could not undo it
            before = {"trace_level": ["OFF"]}
        kserve.update_trace_settings(target, on, model, headers)
        try:
            t0 = time.monotonic_ns()
            result = send()
            t1 = time.monotonic_ns()
        finally:
            kserve.update_trace_settings(target, before, model, headers)
        deadline = time.monotonic() + timeout_s
        found: dict[int, RequestTimeline] = {}
        while True:
            for tl in find_new(base, known, model, t0, t1):
                found.setdefault(tl.root.trace_id, tl)
            if len(found) >= expect:
                out = sorted(found.values(), key=lambda tl: tl.root.start_ns)
                if expect == 1:
                    out[0].client_start_ns, out[0].client_end_ns = t0, t1
                return result, out
            if time.monotonic() > deadline:
                raise TraceError(
                    "not_found",
                    f"{len(found)} of {expect} traces of {model} appeared in {base}.* within {timeout_s:.0f} s",
                )
            time.sleep(0.02)


def traced_call(endpoint: Endpoint, model: str, arrays: dict[str, np.ndarray], protocol: str = "grpc"):
    """One request over ``protocol`` with its trace (embedded server only): (CallResult, timeline)."""
    from triton_kitchen.tools.protocols import (
        Caller,  # protocols is the heavier module; only a live call needs it
    )

    caller = Caller(endpoint, protocol, model, arrays)
    try:
        caller.call()  # connection opened outside the traced window
        result, tl = capture(endpoint, model, caller.call, local=endpoint.embedded)
    finally:
        caller.close()
    tl.protocol = "grpc" if protocol == "grpc" else "http"
    tl.request_bytes, tl.response_bytes = result.request_bytes, result.response_bytes
    return result, tl


def file_signatures(base: Path) -> dict[str, tuple[int, int]]:
    """File name -> (mtime_ns, size) of the trace files there now."""
    out = {}
    for f in trace_files(base):
        try:
            st = f.stat()
        except OSError:
            continue
        out[f.name] = (st.st_mtime_ns, st.st_size)
    return out


def find_new(
    base: Path, known: dict[str, tuple[int, int]], model: str, t0: int, t1: int
) -> list[RequestTimeline]:
    """Traces of ``model`` that started in [t0, t1], in files written since ``known`` was taken.

    A file counts as new when its name or its (mtime, size) changed: a server that restarts on the same
    base name writes ``.0``, ``.1``, ... again, and a name alone would hide its traces.
    """
    out = []
    for f in trace_files(base):
        try:
            st = f.stat()
        except OSError:
            continue
        if known.get(f.name) == (st.st_mtime_ns, st.st_size):
            continue
        try:
            records = read_json_array(f)
        except TraceError:
            continue  # still being written
        for tl in parse_records(records):
            if tl.model == model and t0 <= tl.root.start_ns <= t1:
                ids = _tree_ids(tl.root)
                tl.records = [r for r in records if isinstance(r, dict) and r.get("id") in ids]
                out.append(tl)
    return out


def _tree_ids(node: StepTrace) -> set[int]:
    ids = {node.trace_id}
    for c in node.children:
        ids |= _tree_ids(c)
    return ids
