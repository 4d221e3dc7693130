"""Supervisor process for the embedded tritonserver.

Run as ``python -m triton_kitchen.core._supervise LOGFILE GRACE -- CMD...``. It starts CMD in a process
group of its own and watches its stdin: when stdin reaches EOF (the app closed it, or the app died
and the kernel closed it) or SIGTERM arrives, it terminates the whole group (tritonserver and its
Python backend stubs), waits GRACE seconds, then kills what is left.

A separate process rather than ``PR_SET_PDEATHSIG``: Streamlit starts servers from short-lived
script threads, and a parent-death signal fires when the *thread* that forked exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` seconds, then SIGKILL whatever is left."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main(argv: list[str]) -> int:
    log_path, grace = argv[0], float(argv[1])
    cmd = argv[argv.index("--") + 1 :]
    with open(log_path, "ab", buffering=0) as log:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    done = threading.Event()

    def watch_stdin() -> None:
        try:
            while os.read(0, 1024):  # raw fd: a buffered reader would block interpreter shutdown
                pass
        except OSError:
            pass
        done.set()

    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    threading.Thread(target=watch_stdin, daemon=True).start()
    while not done.is_set() and proc.poll() is None:
        done.wait(0.1)
    if proc.poll() is not None:  # tritonserver died on its own: its stubs have nothing to finish
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:
        stop_group(proc, grace)
    return proc.returncode if proc.returncode is not None else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
