"""One base for every error the app turns into a message: a stable ``code`` and Triton's or Python's ``detail``.

``code`` is a key of the UI's message table (``lessons/<lang>/ui.toml``, section ``error``); ``detail`` is
the text behind it, shown under the translated message and written to the log. A subclass whose codes need
words of their own sets ``source`` (``FlowError.source = "flow"``): the UI then reads ``error.<source>_<code>``
before ``error.<code>``. Subclasses inherit their parent's ``source``.
"""

from __future__ import annotations


class KitchenError(Exception):
    """An error with a translation key (``code``) and the verbatim detail behind it."""

    default_code = "unexpected"
    source = ""  # the prefix of this error's own messages in ui.toml [error]; "" for the shared ones only

    def __init__(self, code: str | None = None, detail: str = "") -> None:
        super().__init__(detail or code or self.default_code)
        self.code = code or self.default_code
        self.detail = detail
