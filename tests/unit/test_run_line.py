"""The line for heavy lab runs: runs that do not fit wait with their place told, first come first served, and
start by themselves when workers free; a run of a group waits while another of its group runs."""

from __future__ import annotations

import threading
import time

import pytest

from triton_kitchen.core.budget import WorkerBudget
from triton_kitchen.tools.run_line import RunLine


class Runner:
    """A run in a thread: joins ``line`` for ``workers`` workers, records the places it was told, and holds its
    turn until released."""

    def __init__(self, line: RunLine, workers: int, log: list, name: str, group: str | None = None) -> None:
        self.places: list[int] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.line, self.workers, self.log, self.name, self.group = line, workers, log, name, group
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with self.line.turn(self.workers, lambda p: self.places.append(p.place), group=self.group):
            self.log.append(self.name)
            self.started.set()
            self.release.wait(10)

    def end(self) -> None:
        self.release.set()
        self.thread.join(5)


def _until(cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_two_runs_of_four_go_on_eight_workers_the_rest_wait_in_order():
    line = RunLine(WorkerBudget(8), poll_s=0.05)
    assert line.fits(4) == 2 and line.fits(8) == 1 and line.fits(16) == 1 and line.fits(1) == 8
    log: list[str] = []
    a = Runner(line, 4, log, "a")
    b = Runner(line, 4, log, "b")
    _until(lambda: a.started.is_set() and b.started.is_set())
    c = Runner(line, 4, log, "c")
    _until(lambda: c.places)
    d = Runner(line, 4, log, "d")
    _until(lambda: d.places)
    assert c.places[0] == 1 and d.places[0] == 2  # the place in line, 1: next
    assert line.waiting == 2 and not c.started.is_set()
    a.end()  # a slot frees: the first in line starts by itself
    _until(c.started.is_set)
    _until(lambda: d.places[-1] == 1)  # d moved up
    assert not d.started.is_set()
    b.end()
    _until(d.started.is_set)
    assert log == ["a", "b", "c", "d"] and line.waiting == 0
    c.end()
    d.end()
    assert line.budget.used == 0 and line.budget.runs == 0


def test_a_small_run_does_not_overtake_a_big_one_waiting():
    line = RunLine(WorkerBudget(8), poll_s=0.05)
    log: list[str] = []
    a = Runner(line, 4, log, "a")
    _until(a.started.is_set)
    big = Runner(line, 8, log, "big")  # needs the whole budget
    _until(lambda: big.places)
    small = Runner(line, 1, log, "small")  # would fit now, but waits behind big
    _until(lambda: small.places)
    time.sleep(0.2)
    assert not small.started.is_set() and small.places[-1] == 2
    a.end()
    _until(big.started.is_set)
    big.end()
    _until(small.started.is_set)
    small.end()
    assert log == ["a", "big", "small"]


def test_a_group_runs_one_at_a_time():
    line = RunLine(WorkerBudget(8), poll_s=0.05)
    log: list[str] = []
    a = Runner(line, 1, log, "a", group="classifier")
    _until(a.started.is_set)
    b = Runner(line, 1, log, "b", group="classifier")
    _until(lambda: b.places)
    other = Runner(line, 1, log, "other")  # behind b in line: waits too (first come, first served)
    _until(lambda: other.places)
    assert not b.started.is_set()
    a.end()
    _until(b.started.is_set)
    _until(other.started.is_set)
    b.end()
    other.end()
    assert log == ["a", "b", "other"]


def test_leaving_the_line_while_waiting_frees_the_place():
    """What on_place raises (the page's rerun after Stop) takes the run out of line; the next moves up."""
    line = RunLine(WorkerBudget(4), poll_s=0.05)
    log: list[str] = []
    a = Runner(line, 4, log, "a")
    _until(a.started.is_set)

    class Stopped(Exception):
        pass

    def leave(place) -> None:
        raise Stopped

    with pytest.raises(Stopped):
        with line.turn(4, leave):
            pytest.fail("must not start")
    assert line.waiting == 0
    b = Runner(line, 4, log, "b")
    _until(lambda: b.places)
    assert b.places[0] == 1
    a.end()
    _until(b.started.is_set)
    b.end()
    assert line.budget.used == 0


def test_a_run_that_fits_starts_at_once_without_being_told_a_place():
    line = RunLine(WorkerBudget(8))
    told = []
    with line.turn(4, told.append) as waited:
        assert waited == 0 and line.budget.used == 4
    assert told == [] and line.budget.used == 0
