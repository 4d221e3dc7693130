"""A process-wide budget for load-generating lab runs, shared by every session of the app.

Each lab run is capped per session (``load.MAX_CONCURRENCY``), but thirty students on one laptop
could still start thirty runs at once and starve the class's own requests. So every heavy lab run
(a bounded load, a sweep, a perf_analyzer cross-check, a batching experiment) first takes workers
from one budget for the whole process. A run that asks for more workers than the budget holds takes
all of it (it runs alone). When the budget is taken, :meth:`WorkerBudget.hold` waits briefly, then
raises :class:`BudgetBusy` — the page says so at once instead of queueing a student for minutes.

The budget is ``TRITON_KITCHEN_LAB_WORKERS`` workers, by default 4 per CPU core (8 on a 2-core
laptop). The library never imports Streamlit: the UI decides what to show.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.settings import settings


def default_workers() -> int:
    return settings().lab_workers


@dataclass
class BudgetBusy(KitchenError):
    """Not enough free workers right now: ``used`` of ``total`` are held by ``runs`` other run(s)."""

    wanted: int
    used: int
    total: int
    runs: int

    def __post_init__(self) -> None:
        KitchenError.__init__(self, "lab_busy", str(self))

    def __str__(self) -> str:
        return f"lab budget busy: {self.used}/{self.total} workers held by {self.runs} run(s); wanted {self.wanted}"


class WorkerBudget:
    def __init__(self, total: int | None = None) -> None:
        self.total = max(1, int(total or default_workers()))
        self._used = 0
        self._runs = 0
        self._cond = threading.Condition()

    @property
    def used(self) -> int:
        return self._used

    @property
    def runs(self) -> int:
        return self._runs

    def cost(self, workers: int) -> int:
        """Workers a run of ``workers`` takes from the budget (all of it when it asks for more)."""
        return max(1, min(int(workers), self.total))

    @contextmanager
    def hold(self, workers: int, wait_s: float = 1.0) -> Iterator[int]:
        """Hold ``cost(workers)`` workers for the ``with`` block; BudgetBusy after ``wait_s`` without."""
        need = self.cost(workers)
        deadline = time.monotonic() + max(0.0, wait_s)
        with self._cond:
            while self._used + need > self.total:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BudgetBusy(need, self._used, self.total, self._runs)
                self._cond.wait(left)
            self._used += need
            self._runs += 1
        try:
            yield need
        finally:
            with self._cond:
                self._used -= need
                self._runs -= 1
                self._cond.notify_all()


LAB_BUDGET = WorkerBudget()
