"""The line for heavy lab runs: first come, first served, each run starting by itself once the class's worker
budget has room for it.

The app-wide budget (:data:`triton_kitchen.core.budget.LAB_BUDGET`, 4 load workers per CPU core) caps the
load the whole class makes at once; a run takes as many workers as its concurrency. At the protocol lab's
default concurrency of 4, two runs fit at once on a 2-core machine. A run that does not fit now joins the line
instead of being refused: :meth:`RunLine.turn` waits, telling its caller the run's place (1: next) every
``poll_s``, until the run is first in line and its workers are free. Only the first in line may take workers,
so a small run never overtakes a big one that waits. A ``group`` names what runs may not share (the batching lab
reloads the one classifier every session uses): a run waits while another run of its group is going.

The library never imports Streamlit: ``on_place`` is the page's way to show the place (and, by raising, to leave
the line: the learner pressed Stop, or closed the tab).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from triton_kitchen.core.budget import LAB_BUDGET, BudgetBusy, WorkerBudget

POLL_S = 0.5  # how often a waiting run's place is told again


@dataclass(frozen=True)
class Place:
    """Where a waiting run stands: ``place`` in line (1: next), ``running`` runs going, ``used`` of ``total``
    workers held (by every run of the app, the line's and others')."""

    place: int
    running: int
    used: int
    total: int


class RunLine:
    """Heavy runs of one app process, in order of arrival, over one :class:`WorkerBudget`."""

    def __init__(self, budget: WorkerBudget | None = None, poll_s: float = POLL_S) -> None:
        self.budget = budget or LAB_BUDGET
        self.poll_s = poll_s
        self._line: list[int] = []  # waiting tickets, first in line first
        self._groups: dict[str, int] = {}  # group -> runs of it going
        self._numbers = itertools.count(1)
        self._cond = threading.Condition()

    def fits(self, workers: int) -> int:
        """How many runs of ``workers`` workers go at once when nothing else runs."""
        return max(1, self.budget.total // self.budget.cost(workers))

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._line)

    def _place(self, ticket: int) -> Place:
        return Place(self._line.index(ticket) + 1, self.budget.runs, self.budget.used, self.budget.total)

    def _try_start(self, ticket: int, workers: int, group: str | None, stack: ExitStack) -> bool:
        """Take the workers when ``ticket`` is first in line, its group is free and the budget has room."""
        if self._line[0] != ticket or (group is not None and self._groups.get(group)):
            return False
        try:
            stack.enter_context(self.budget.hold(workers, wait_s=0.0))
        except BudgetBusy:
            return False
        self._line.pop(0)
        if group is not None:
            self._groups[group] = self._groups.get(group, 0) + 1
        return True

    @contextmanager
    def turn(
        self,
        workers: int,
        on_place: Callable[[Place], None] | None = None,
        group: str | None = None,
    ) -> Iterator[int]:
        """Wait in line until the run may start, then hold its workers for the ``with`` block; yields how long
        it waited in places told (0: it started at once). ``on_place(place)`` is called, outside any lock,
        when the run must wait and then every ``poll_s``; whatever it raises takes the run out of line."""
        ticket = next(self._numbers)
        told = 0
        with ExitStack() as stack:
            with self._cond:
                self._line.append(ticket)
            try:
                while True:
                    with self._cond:
                        if self._try_start(ticket, workers, group, stack):
                            break
                        place = self._place(ticket)
                    told += 1
                    if on_place is not None:
                        on_place(place)
                    with self._cond:  # woken when a run ends; a run of another page's ends unseen: poll
                        self._cond.wait(self.poll_s)
            except BaseException:
                with self._cond:
                    if ticket in self._line:
                        self._line.remove(ticket)
                    self._cond.notify_all()
                raise
            try:
                yield told
            finally:
                with self._cond:
                    if group is not None:
                        self._groups[group] -= 1
                    stack.close()  # the workers go back to the budget
                    self._cond.notify_all()


LAB_LINE = RunLine()
