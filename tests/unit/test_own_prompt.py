"""Chapter 11's own-prompt element without a server: the checks before sending and the line of seats."""

from __future__ import annotations

import math

import pytest

from triton_kitchen.labs import own_prompt as own
from triton_kitchen.tools import seats as seats_module
from triton_kitchen.tools.seats import Seats


def test_an_empty_prompt_is_refused_before_sending():
    for prompt in ("", "   ", "\n\t", None):
        with pytest.raises(own.EmptyPrompt):
            own.own_ask(prompt, 8, 0)


def test_max_tokens_and_temperature_are_clamped_and_noted():
    assert own.own_ask("hi", 8, 0.5).notes == ()
    assert own.own_ask("hi", -3, 0).job.max_tokens == 1
    ask = own.own_ask("hi", 10**12, -1)
    assert (ask.job.max_tokens, ask.job.temperature) == (own.OWN_MAX_TOKENS, 0.0)
    assert ask.notes == (
        ("tokens_high", {"asked": 10**12, "used": own.OWN_MAX_TOKENS}),
        ("temperature", {"asked": -1.0, "used": 0.0}),
    )
    assert own.own_ask("hi", "x", math.nan).job.temperature == 0.0


def test_seats_first_come_first_served_with_a_place():
    seats = Seats(2)
    a, b, c, d = (seats.join() for _ in range(4))
    assert [seats.place(x) for x in (a, b, c, d)] == [0, 0, 1, 2] and seats.waiting == 2
    seats.leave(a)
    assert [seats.place(x) for x in (b, c, d)] == [0, 0, 1]
    seats.leave(d)  # a learner who leaves the line
    seats.leave(d)
    assert seats.waiting == 0 and seats.place(c) == 0


def test_a_ticket_not_seen_for_a_while_loses_its_place(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(seats_module.time, "monotonic", lambda: now[0])
    seats = Seats(1, stale_s=10)
    a, b, c = (seats.join() for _ in range(3))
    assert [seats.place(x) for x in (a, b, c)] == [0, 1, 2]
    now[0] += 6
    seats.touch(a)  # streaming: the holder touches its ticket
    assert seats.place(c) == 2
    now[0] += 6  # b not seen for 12 s: a tab closed while waiting
    assert seats.place(c) == 1 and seats.place(b) == -1 and seats.place(a) == 0
