"""A heavy lab run (a load test, a sweep, a batching run) as the class sees it: it waits in the class's line
with its place shown (``triton_kitchen.tools.run_line``), then runs in a worker process, off the app's
interpreter (``triton_kitchen.tools.worker_process``), so one student's load does not stall the other students'
clicks. Its progress is drawn in the page's script thread as it comes back; Stop (a rerun of the page) takes the
run out of line, or stops its worker."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

from triton_kitchen.tools import worker_process
from triton_kitchen.tools.run_line import LAB_LINE, Place
from triton_kitchen.tools.worker_process import run_in_worker
from ui.i18n import t


def line_note(workers: int) -> None:
    """Says how many runs of ``workers`` workers go at once on this machine, and that the others wait in line.
    The lab pages draw it: the worker processes' fork server starts (in the background) as a lab page is first
    opened, not on the first run."""
    worker_process.warm_up()
    budget = LAB_LINE.budget
    st.caption(
        t(
            "lab.line_note",
            total=budget.total,
            cores=os.cpu_count() or 1,
            c=workers,
            n=LAB_LINE.fits(workers),
        )
    )


@contextmanager
def turn_in_line(workers: int, group: str | None = None) -> Iterator[Callable[..., Any]]:
    """Wait in the class's line, the place shown, until a run of ``workers`` workers may start (``group``: runs
    that may not go together); yields :func:`run_in_worker` for the run, whose workers are held until the
    ``with`` block ends."""
    slot = st.empty()

    def say_place(p: Place) -> None:
        slot.info(t("lab.queued", place=p.place, running=p.running, used=p.used, total=p.total), icon="⏳")

    with LAB_LINE.turn(workers, say_place, group=group):
        slot.empty()
        yield run_in_worker


def run_heavy(
    workers: int,
    target: Callable[..., Any],
    *args: Any,
    progress: Callable[[Any], None] | None = None,
    stop: threading.Event | None = None,
    group: str | None = None,
    **kwargs: Any,
) -> Any:
    """``target(*args, report=..., stop=..., **kwargs)`` in a worker process once the line lets a run of
    ``workers`` workers start; returns what it returned. ``progress(value)`` draws what the worker reported."""
    with turn_in_line(workers, group) as run:
        return run(target, *args, progress=progress, stop=stop, **kwargs)
