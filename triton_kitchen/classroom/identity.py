"""A student without an account: a nickname and the class code the teacher gave, both checked here."""

from __future__ import annotations

import re
from dataclasses import dataclass

# class codes: ASCII letters, digits, - and _, up to 32 (the teacher gives one code, typed by every student)
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
# nicknames: letters and digits of any script (陈同学, José), - and _, up to 32; no spaces, punctuation or markup
NICKNAME_RE = re.compile(r"^[\w-]{1,32}$")


class IdentityError(ValueError):
    """A nickname that is not 1 to 32 letters (of any script), digits, ``-`` and ``_``, or a class code that is
    not 1 to 32 ASCII letters, digits, ``-`` and ``_``."""

    def __init__(self, field: str, value: str) -> None:
        kind = "letters" if field == "nickname" else "ASCII letters"
        super().__init__(f"{field} must be 1-32 {kind}, digits, '-' or '_': {value!r}")
        self.field = field


@dataclass(frozen=True)
class Student:
    nickname: str
    class_code: str

    def __post_init__(self) -> None:
        if not valid_nickname(self.nickname):
            raise IdentityError("nickname", self.nickname)
        if not valid(self.class_code):
            raise IdentityError("class", self.class_code)


def valid(value: str | None) -> bool:
    """A valid class code."""
    return bool(value) and NAME_RE.fullmatch(value) is not None


def valid_nickname(value: str | None) -> bool:
    return bool(value) and NICKNAME_RE.fullmatch(value) is not None


def student_from(nickname: str | None, class_code: str | None) -> Student | None:
    """The student named by (e.g. URL) parameters, or None when either is missing or not valid."""
    if valid_nickname(nickname) and valid(class_code):
        return Student(nickname, class_code)
    return None
