"""The server's own statistics over a load run's measuring window (:func:`triton_kitchen.tools.bench.run_bench`).

Snapshots of the statistics API at the window's start and end, each read on a thread of its own, bounded by
the run's hard limit; their difference is :func:`triton_kitchen.tools.server_stats.breakdown`.
"""

from __future__ import annotations

import threading
import time

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import server_stats


class StatsWindow:
    """Statistics snapshots at the measuring window's start and end, each taken on a thread of its own so a
    slow or hanging statistics API can never hold the run past its hard limit."""

    def __init__(self, endpoint: Endpoint, model: str, deadline: float) -> None:
        self.endpoint, self.model, self.deadline = endpoint, model, deadline
        self.snaps: dict[str, server_stats.Snapshot | None] = {}
        self.composing: list[str] = []
        self.note = ""
        self.threads: dict[str, threading.Thread] = {}

    def _take(self, which: str) -> None:
        timeout = max(0.1, min(2.0, self.deadline - time.perf_counter()))
        try:
            if which == "before":
                # bounded like the snapshot: against a hanging server this thread ends by the run's limit too
                self.composing = server_stats.composing_models(self.endpoint, self.model, timeout=timeout)
            self.snaps[which] = server_stats.snapshot(self.endpoint, timeout=timeout)
        except (kserve.KServeError, ValueError) as exc:
            self.note = f"the statistics API did not answer: {exc}"

    def _spawn(self, which: str) -> None:
        if which not in self.threads:
            th = threading.Thread(target=self._take, args=(which,), name=f"bench-stats-{which}", daemon=True)
            self.threads[which] = th
            th.start()

    def start(self) -> None:
        self._spawn("before")

    def end(self) -> None:
        if "before" in self.threads:
            self.threads["before"].join(timeout=max(0.0, self.deadline - time.perf_counter()))
            if self.snaps.get("before") is not None:
                self._spawn("after")

    def breakdown(self):
        for th in self.threads.values():
            th.join(timeout=max(0.0, self.deadline - time.perf_counter()))
        before, after = self.snaps.get("before"), self.snaps.get("after")
        if before is None or after is None:
            return None, self.note or "the run ended before its measuring window opened", ()
        bd = server_stats.breakdown(before, after, self.model, self.composing)
        return bd, "", (before, after)
