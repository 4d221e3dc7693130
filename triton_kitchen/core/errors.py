"""One base for every error the app turns into a message: a stable ``code`` and Triton's or Python's ``detail``.

``code`` is a key of the UI's message table (``lessons/<lang>/ui.toml``, section ``error``); ``detail`` is
the text behind it, shown under the translated message and written to the log. Subclasses name where the
error came from (classify, flow, repository, ...); the UI maps every one of them the same way.
"""

from __future__ import annotations


class KitchenError(Exception):
    """An error with a translation key (``code``) and the verbatim detail behind it."""

    default_code = "unexpected"

    def __init__(self, code: str | None = None, detail: str = "") -> None:
        super().__init__(detail or code or self.default_code)
        self.code = code or self.default_code
        self.detail = detail
