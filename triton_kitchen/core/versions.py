"""Which Triton: a version as a number, the NGC release that ships it, and the versions the course knows.

Triton's version (``2.51``) and its NGC container release (``24.10``) are two names for one server: the
server repository's ``TRITON_VERSION`` file at each ``rYY.MM`` branch says which.  From r24.01 (2.42) one
minor version a month up to r25.06 (2.59); r25.07 is 2.59.1, so from r25.08 (2.60) the months run one ahead of
the minor version (r26.04 is 2.68, r26.08 is 2.72).

    v = TritonVersion.parse("2.72")     # or "2.72.0", or the release "26.08"
    v >= FIRST_MODEL_METRICS, v.release  # True, "26.08"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EMBEDDED", "KNOWN", "NEWEST", "TritonVersion", "VersionError", "checked_version"]


class VersionError(ValueError):
    """A version ``check`` cannot name or does not know the rules of."""


@dataclass(frozen=True, order=True)
class TritonVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> TritonVersion:
        """``2.72``, ``2.72.0``, ``v2.72.0`` or an NGC release ``26.08`` / ``r26.08``."""
        raw = str(text).strip()
        m = re.fullmatch(r"[vV]?(\d+)\.(\d+)(?:\.\d+)?", raw) or re.fullmatch(r"[rR](\d+)\.(\d+)", raw)
        if not m:
            raise VersionError(f"'{text}' is not a Triton version (like 2.51) or an NGC release (like 24.10)")
        major, minor = int(m.group(1)), int(m.group(2))
        if major >= 20:  # an NGC release, YY.MM
            return cls.from_release(major, minor)
        return cls(major, minor)

    @classmethod
    def from_release(cls, year: int, month: int) -> TritonVersion:
        """The Triton version of NGC release ``year.month`` (from 24.01)."""
        months = (year - 24) * 12 + (month - 1)  # 0 for 24.01
        if not 1 <= month <= 12 or months < 0:
            raise VersionError(
                f"{year:02d}.{month:02d} is not an NGC release this course knows (24.01 or later)"
            )
        if months <= 17:  # 24.01 (2.42) .. 25.06 (2.59)
            return cls(2, 42 + months)
        if months == 18:  # 25.07 shipped 2.59.1
            return cls(2, 59)
        return cls(2, 41 + months)  # 25.08 (2.60) onwards

    @property
    def release(self) -> str:
        """The NGC release (``24.10``) that ships this version."""
        if self.major != 2 or self.minor < 42:
            return "?"
        months = self.minor - 42 if self.minor <= 59 else self.minor - 41
        return f"{24 + months // 12}.{months % 12 + 1:02d}"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


EMBEDDED = TritonVersion(2, 51)  # the embedded server (nvidia-pytriton's tritonserver, NGC 24.10)
NEWEST = TritonVersion(2, 72)  # the newest version whose rules check knows (its QA suite, NGC 26.08)
KNOWN = (EMBEDDED, NEWEST)  # the versions check is tested against Triton's own QA suite of


def checked_version(text: str | None) -> TritonVersion:
    """The version ``check --triton-version`` names, refused outside what ``check`` knows the rules of."""
    if text is None:
        return EMBEDDED
    v = TritonVersion.parse(text)
    if not EMBEDDED <= v <= NEWEST:
        raise VersionError(
            f"check knows the rules of Triton {EMBEDDED} to {NEWEST} (NGC {EMBEDDED.release} to {NEWEST.release}), "
            f"not {v}"
        )
    return v
