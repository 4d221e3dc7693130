"""A student without an account: a nickname and the class code the teacher gave, both checked here."""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME_RE = re.compile(
    r"^[A-Za-z0-9_-]{1,32}$"
)  # nicknames and class codes: letters, digits, - and _, up to 32


class IdentityError(ValueError):
    """A nickname or class code that is not letters, digits, ``-`` and ``_`` (1 to 32 of them)."""

    def __init__(self, field: str, value: str) -> None:
        super().__init__(f"{field} must be 1-32 letters, digits, '-' or '_': {value!r}")
        self.field = field


@dataclass(frozen=True)
class Student:
    nickname: str
    class_code: str

    def __post_init__(self) -> None:
        if not valid(self.nickname):
            raise IdentityError("nickname", self.nickname)
        if not valid(self.class_code):
            raise IdentityError("class", self.class_code)


def valid(value: str | None) -> bool:
    return bool(value) and NAME_RE.fullmatch(value) is not None


def student_from(nickname: str | None, class_code: str | None) -> Student | None:
    """The student named by (e.g. URL) parameters, or None when either is missing or not valid."""
    if valid(nickname) and valid(class_code):
        return Student(nickname, class_code)
    return None
