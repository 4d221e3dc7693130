"""Helpers shared by tests/unit/test_classroom.py and tests/live/test_classroom_live.py."""

from __future__ import annotations

from triton_kitchen.classroom import (
    Student,
)

AMY, BOB = Student("amy", "t-101"), Student("bob_2", "t-101")


def first_question_id() -> str:
    from triton_kitchen.core import lessons

    return lessons.load_quiz(1, "en")[0].id
