"""A waiting line with a fixed number of seats, shared by every session of the app: who holds one, and each
waiter's place in line."""

from __future__ import annotations

import itertools
import threading
import time


class Seats:
    """At most ``total`` holders at once; the others wait in line, first come first served. A ticket's
    :meth:`place` is 0 while it holds a seat, else its place in the waiting line (1: next). A ticket not seen
    (:meth:`place` or :meth:`touch`) for ``stale_s`` is dropped: a learner who closed the tab keeps no seat."""

    def __init__(self, total: int, stale_s: float = 10.0) -> None:
        self.total = max(1, int(total))
        self.stale_s = stale_s
        self._line: list[int] = []
        self._seen: dict[int, float] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        for ticket in [x for x in self._line if now - self._seen.get(x, now) > self.stale_s]:
            self._line.remove(ticket)
            self._seen.pop(ticket, None)

    def join(self) -> int:
        with self._lock:
            ticket = next(self._numbers)
            self._line.append(ticket)
            self._seen[ticket] = time.monotonic()
            return ticket

    def touch(self, ticket: int) -> None:
        with self._lock:
            if ticket in self._seen:
                self._seen[ticket] = time.monotonic()

    def place(self, ticket: int) -> int:
        """0: seated; n > 0: n-th in the waiting line; -1: not in line (left, or dropped as stale)."""
        now = time.monotonic()
        with self._lock:
            self._prune(now)
            if ticket not in self._line:
                return -1
            self._seen[ticket] = now
            i = self._line.index(ticket)
        return 0 if i < self.total else i - self.total + 1

    def leave(self, ticket: int) -> None:
        with self._lock:
            if ticket in self._line:
                self._line.remove(ticket)
            self._seen.pop(ticket, None)

    @property
    def waiting(self) -> int:
        with self._lock:
            return max(0, len(self._line) - self.total)
