"""The app's one embedded server, supervised: started on first use and restarted in the background.

No page waits for Triton: the first start and every restart run on a background thread, and
:meth:`ServerSupervisor.state` answers at once from a process check. The server is made by an injected
factory (the app's ``EmbeddedServer``; tests give a small one-model server). No Streamlit here: the UI
keeps one supervisor per app process (``ui.server``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from triton_kitchen.core.server import ServerStartError

RESTART_TIMEOUT_S = 180.0

log = logging.getLogger(__name__)


class Supervised(Protocol):
    """What the supervisor needs of a server (``triton_kitchen.core.server.EmbeddedServer`` has it)."""

    @property
    def running(self) -> bool: ...

    def start(self, timeout: float = ...) -> object: ...

    def ensure_running(self, timeout: float = ...) -> bool: ...

    def restart(self, timeout: float = ...) -> object: ...


@dataclass(frozen=True)
class Snapshot:
    """What :meth:`ServerSupervisor.adopt` replaced, for :meth:`ServerSupervisor.restore`."""

    server: Supervised | None
    error: Exception | None
    died_at: float | None
    factory: Callable[[], Supervised]


class ServerSupervisor:
    """Starts the server once (:meth:`start_async`), restarts it in the background (:meth:`restart_async`),
    remembers a failed start and when the server died. Every field is read through a property."""

    def __init__(self, factory: Callable[[], Supervised], restart_timeout: float = RESTART_TIMEOUT_S) -> None:
        self._factory = factory
        self.restart_timeout = restart_timeout
        self._lock = threading.Lock()
        self._server: Supervised | None = None
        self._error: Exception | None = None
        self._died_at: float | None = None  # time.time() when a dead process was first noticed
        self._restarter: threading.Thread | None = None

    @property
    def server(self) -> Supervised | None:
        return self._server

    @property
    def error(self) -> Exception | None:
        """Why the first start or the last restart failed (None when it did not)."""
        return self._error

    @property
    def died_at(self) -> float | None:
        return self._died_at

    @property
    def restarting(self) -> bool:
        return self._restarter is not None and self._restarter.is_alive()

    def start_async(self) -> None:
        """The first start, in the background (nothing when a server exists or its start failed)."""
        with self._lock:
            if self._server is None and self._error is None:
                self._spawn(force=False)

    def state(self) -> str:
        """ "starting" (first start), "up", "restarting", "stopped" (died, not restarting) or "failed" (never
        started / restart failed). Cheap: a process check, no network."""
        if self.restarting:
            return "starting" if self._server is None else "restarting"
        server = self._server
        if server is None:
            return "failed" if self._error is not None else "stopped"
        if server.running:
            return "up"
        with self._lock:
            if self._died_at is None:
                self._died_at = time.time()
        return "stopped"

    def restart_async(self, force: bool = False) -> None:
        """Restart in a background thread: a dead server, or any (``force``)."""
        with self._lock:
            if self._died_at is None and not self.restarting:
                self._died_at = time.time()
            self._spawn(force)

    def _spawn(self, force: bool) -> None:
        """Run :meth:`_restart` in a background thread unless one runs already (the caller holds the lock)."""
        if self.restarting:
            return
        self._restarter = threading.Thread(
            target=self._restart, args=(force,), name="triton-kitchen", daemon=True
        )
        self._restarter.start()

    def _restart(self, force: bool) -> None:
        server = self._server
        try:
            if server is None:
                server = self._factory()
                server.start(timeout=self.restart_timeout)
            elif force or not server.running:
                if not server.ensure_running(timeout=self.restart_timeout) and (force or not server.running):
                    server.restart(timeout=self.restart_timeout)
        except (ServerStartError, OSError) as exc:
            log.exception("the embedded Triton server did not start")
            with self._lock:
                self._error = exc
            return
        with self._lock:
            self._server, self._error, self._died_at = server, None, None

    def wait(self, timeout: float) -> bool:
        """Wait for a background start or restart to end; True when the server is up."""
        thread = self._restarter
        if thread is not None:
            thread.join(timeout)
        return self.state() == "up"

    def restart(self) -> Supervised | None:
        """Restart and wait (scripts and tests); pages use :meth:`restart_async`."""
        self.restart_async(force=True)
        self.wait(self.restart_timeout + 10)
        return self._server

    def adopt(self, server: Supervised | None, factory: Callable[[], Supervised] | None = None) -> Snapshot:
        """Supervise ``server`` (already started) from now on; with None, forget the server so that the next
        :meth:`start_async` makes one with ``factory`` (or the current factory). Waits for a running restart
        first. Returns what was replaced, for :meth:`restore`."""
        self.wait(self.restart_timeout + 10)
        with self._lock:
            before = Snapshot(self._server, self._error, self._died_at, self._factory)
            self._server, self._error, self._died_at = server, None, None
            if factory is not None:
                self._factory = factory
        return before

    def restore(self, snapshot: Snapshot) -> None:
        """Back to what :meth:`adopt` replaced (after a running restart ends)."""
        self.wait(self.restart_timeout + 10)
        with self._lock:
            self._server, self._error, self._died_at = snapshot.server, snapshot.error, snapshot.died_at
            self._factory = snapshot.factory
