"""Helpers shared by tests/unit/test_server_lifecycle.py and tests/live/test_server_lifecycle_live.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from triton_kitchen.core.server import (
    RUN_OWNER,
)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def run_folder(root: Path, name: str, owner: str | None, age_s: float = 0.0) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "tritonserver.log").write_text("I1201 tritonserver\n")
    if owner is not None:
        (folder / RUN_OWNER).write_text(owner + "\n")
    if age_s:
        then = time.time() - age_s
        for path in [*folder.iterdir(), folder]:
            os.utime(path, (then, then))
    return folder
