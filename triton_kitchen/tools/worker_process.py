"""A heavy run in a worker process, off the app's interpreter, with its progress coming back and a stop going in.

Every session of a Streamlit app shares one Python interpreter. A lab's load generator is Python threads
(tritonclient's encoding, numpy, the timing loop): run inside the app, they hold the interpreter's lock that
every other student's click needs. :func:`run_in_worker` runs ``target(*args, report=..., stop=..., **kwargs)``
in a process of its own instead and waits for it, without holding that lock more than it must:

- ``report(value)`` (in the worker) sends ``value`` back; :func:`run_in_worker` calls ``progress(value)`` with
  it in the caller's thread, where a page may draw it;
- ``stop`` (in the worker) is an event the worker's run checks as a ``threading.Event``; it is set when the
  caller's own ``stop`` is set, and when the caller leaves early (whatever ``progress`` raised: a page's
  rerun after Stop). The worker then has ``grace_s`` to end (a batching run restores the model's
  config), and is terminated after that;
- the return value (or the exception) comes back pickled; an exception comes back as its own class
  (rebuilt from its attributes), or as a :class:`WorkerError` naming it when those cannot cross; a worker that died says so (:class:`WorkerError`,
  code ``worker_died``).

Workers are forked from a fork server (a fresh interpreter, started once, that imports ``PRELOAD`` first: a run
starts in milliseconds, not an interpreter's start-up), or spawned where there is no fork server (Windows). The
measurements are the same code as in the app, only in another process.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from multiprocessing import spawn
from typing import Any

from triton_kitchen.core.errors import KitchenError

# what every worker imports before it is forked: the load engine, tritonclient, numpy. Never "__main__": in a
# Streamlit app that is the page's script, which would run in the fork server (and, left to multiprocessing, in
# every worker: :func:`_preparation_without_main`)
PRELOAD = ["triton_kitchen.tools.bench"]
GRACE_S = 30.0  # a stopped worker's time to end cleanly (a batching run reloads the model's config)
POLL_S = 0.1
# A worker runs at a lower scheduling priority than the app: on a busy machine the cores go to the students'
# clicks first. Out of the app's interpreter, nothing else holds a lab's client threads back (inside it, the
# interpreter's lock did, and held the clicks back with them).
NICE = 10

_context_lock = threading.Lock()
_context: Any = None
_warming: threading.Thread | None = None


class WorkerError(KitchenError):
    """The worker's run failed with an exception that could not come back as itself (``detail`` is its type
    and message), or the worker died (code ``worker_died``: its exit code)."""

    default_code = "worker_failed"


_launching = threading.local()  # set while this thread starts a worker
_preparation = spawn.get_preparation_data


def _preparation_without_main(name):
    """What a new process is told to prepare, without the main module when it is one of our workers. A new
    process (spawned, or forked from the fork server) otherwise runs the parent's ``__main__`` first, as
    ``__mp_main__``; in a Streamlit app ``__main__`` is the page's script: every worker ran the whole app, seconds
    of CPU taken from the class's clicks. Our workers' targets live in modules, and they need no main."""
    data = _preparation(name)
    if getattr(_launching, "on", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


def context():
    """The multiprocessing context workers start from: ``forkserver`` where there is one, else ``spawn``."""
    global _context
    with _context_lock:
        if _context is None:
            spawn.get_preparation_data = _preparation_without_main  # only our own starts leave main out
            if "forkserver" in multiprocessing.get_all_start_methods():
                ctx = multiprocessing.get_context("forkserver")
                ctx.set_forkserver_preload(PRELOAD)
            else:
                ctx = multiprocessing.get_context("spawn")
            _context = ctx
        return _context


def warm_up() -> None:
    """Start the fork server now, in the background (once per process): its start (an interpreter importing the
    load engine, seconds of CPU) then does not fall on the first run, nor on the clicks made meanwhile."""
    global _warming
    with _context_lock:
        if _warming is not None:
            return
        _warming = threading.Thread(target=_start_fork_server, name="lab-worker-warm-up", daemon=True)
    _warming.start()


def _start_fork_server() -> None:
    if context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _unpack(packed: tuple) -> BaseException:
    """An exception rebuilt from its class, args and attributes, without calling its ``__init__`` (whose
    signature pickle does not know: ``KServeError(code, detail, status)`` has ``args == (detail,)``)."""
    cls, args, attrs = packed
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(attrs)
    return exc


class _Pickler(pickle.Pickler):
    """Pickles exceptions, wherever they sit in a result, as :func:`_unpack` rebuilds them; one whose
    attributes cannot be pickled becomes a :class:`WorkerError` that names it."""

    def reducer_override(self, obj):
        if not isinstance(obj, BaseException):
            return NotImplemented
        attrs = dict(vars(obj))
        try:
            _dumps(attrs)
            _dumps(obj.args)
        except Exception:  # noqa: BLE001 - any attribute that cannot cross
            return WorkerError, ("worker_failed", f"{type(obj).__name__}: {obj}")
        return _unpack, ((type(obj), obj.args, attrs),)


def _dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _child(target, args, kwargs, conn, stop) -> None:
    """The worker: run ``target`` and send back what it reports, then its result or its exception."""
    lock = threading.Lock()
    if hasattr(os, "nice"):
        os.nice(NICE)

    def send(message) -> None:
        payload = _dumps(message)
        pickle.loads(payload)  # what cannot be read back fails here, in the worker, where it is said
        with lock:
            conn.send_bytes(payload)

    try:
        result = target(*args, report=lambda value: send(("progress", value)), stop=stop, **kwargs)
        message = ("done", result)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the caller
        message = ("error", exc)
    try:
        send(message)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be pickled
        send(("error", WorkerError("worker_failed", f"result not sent: {type(exc).__name__}: {exc}")))
    conn.close()


def run_in_worker(
    target: Callable[..., Any],
    /,
    *args: Any,
    progress: Callable[[Any], None] | None = None,
    stop: threading.Event | None = None,
    grace_s: float = GRACE_S,
    poll_s: float = POLL_S,
    **kwargs: Any,
) -> Any:
    """``target(*args, report=report, stop=stop_event, **kwargs)`` in a worker process; returns what it returned,
    or raises what it raised. ``target`` must be a module-level function, and its arguments picklable."""
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    halt = ctx.Event()
    proc = ctx.Process(target=_child, args=(target, args, kwargs, send, halt), daemon=True, name="lab-worker")
    _launching.on = True
    try:
        proc.start()
    finally:
        _launching.on = False
    send.close()  # ours is closed: the worker's end closing is what ends the pipe
    try:
        while True:
            if stop is not None and stop.is_set():
                halt.set()
            if not receive.poll(poll_s):
                if not proc.is_alive() and not receive.poll(0):
                    raise WorkerError("worker_died", f"the worker ended with exit code {proc.exitcode}")
                continue
            try:
                kind, value = pickle.loads(receive.recv_bytes())
            except EOFError:
                proc.join(1.0)
                raise WorkerError("worker_died", f"the worker ended with exit code {proc.exitcode}") from None
            if kind == "progress":
                if progress is not None:
                    progress(value)
            elif kind == "done":
                return value
            else:
                raise value
    finally:
        halt.set()  # a no-op after a run that ended by itself
        _drain_until_ended(proc, receive, grace_s)
        receive.close()


def _drain_until_ended(proc, receive, grace_s: float) -> None:
    """Wait up to ``grace_s`` for the worker to end, reading (and dropping) what it still sends: a stopped
    worker sends its result, which must not wait on a full pipe nobody reads; then terminate it."""
    deadline = time.monotonic() + grace_s
    while proc.is_alive() and time.monotonic() < deadline:
        try:
            if receive.poll(0.05):
                receive.recv_bytes()
        except (EOFError, OSError):  # its end is closed: it is exiting
            proc.join(0.05)
    if proc.is_alive():
        proc.terminate()
        proc.join(5.0)
