"""A throwaway PostgreSQL server from Debian's ``postgresql`` package (``.ci/run`` installs it): initdb into a
temporary folder, start on a free port, yield its URL, stop and delete.  As root it runs as ``postgres``."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def pg_bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    return Path(dirs[-1]) if dirs else None


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@contextlib.contextmanager
def postgres_server():
    """Yields ``postgresql://kitchen@127.0.0.1:PORT/kitchen`` of a fresh server."""
    from triton_kitchen.core.server import free_port

    bindir = pg_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="tk-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = free_port()
    run = lambda *cmd: subprocess.run(_as_postgres(list(cmd)), check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "kitchen", "--no-sync")
        run(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
            "-o", f"-p {port} -k {sock} -h 127.0.0.1 -c fsync=off", "start",
        )  # fmt: skip
        run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "kitchen", "kitchen")
        yield f"postgresql://kitchen@127.0.0.1:{port}/kitchen"
    finally:
        with contextlib.suppress(Exception):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
