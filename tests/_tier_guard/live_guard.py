"""The fast tier's guard: subprocess.Popen refuses tritonserver, Chromium, Playwright's driver and streamlit.

Imported by tests/_tiers.py in the test process and by sitecustomize.py (next to this file) in child Python
processes; it imports nothing from pytest, so children stay quick.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GUARD_ENV = "TRITON_KITCHEN_NO_LIVE"  # set under the fast tier: the file where refused starts are logged

# program names (the last part of an argument that is a path or a module) that only live tests may start
FORBIDDEN = frozenset(
    {"tritonserver", "triton_kitchen.core._supervise", "chromium", "chromium-browser", "streamlit"}
)


def _forbidden(args) -> str | None:
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    for arg in map(os.fsdecode, argv):
        if any(ch.isspace() for ch in arg):
            continue  # a script or a message, not a program
        parts = Path(arg).parts
        if parts and parts[-1] in FORBIDDEN:
            return parts[-1]
        if "playwright" in parts:  # Playwright's driver, which starts Chromium
            return "playwright"
    return None


def forbid_live_processes() -> None:
    """Make subprocess.Popen refuse tritonserver, Chromium, Playwright's driver and streamlit (idempotent)."""
    if getattr(subprocess.Popen, "_tk_guarded", False):
        return
    original_init = subprocess.Popen.__init__

    def guarded_init(self, args, *rest, **kwargs):
        word = _forbidden(args)
        if word:
            test = os.environ.get("PYTEST_CURRENT_TEST", f"pid {os.getpid()} (a child of the test run)")
            line = f"{test}: {word}: {args!r}"
            log = os.environ.get(GUARD_ENV)
            if log:
                with open(log, "a") as out:
                    out.write(line[:400] + "\n")
            raise RuntimeError(f"live process started by a test not marked live (fast tier): {line[:400]}")
        original_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = guarded_init
    subprocess.Popen._tk_guarded = True
