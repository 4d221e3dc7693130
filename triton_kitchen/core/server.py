"""The real Triton server: the embedded ``tritonserver`` binary from the nvidia-pytriton wheel, or a remote URL.

The embedded server runs on ``model_repository/`` in explicit model-control mode with every model loaded
at start, binds 127.0.0.1, restricts its repository and trace APIs to a key only the app holds, and
writes Triton traces to a file the app can read. Its log and traces live in a ``run-*`` folder of the
cache, made by :meth:`EmbeddedServer.start` and removed by :meth:`EmbeddedServer.stop`; a start also
removes the folders of app processes that ended without a stop.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import DEFAULT_PORTS, RESTRICTED_HEADER, Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.settings import settings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REPOSITORY = REPO_ROOT / "model_repository"
RESTRICTED_CATEGORIES = "model-repository,trace"
# the response cache every model with `response_cache { enable: true }` uses (the wheel's caches/local library)
RESPONSE_CACHE_BYTES = 16 * 1024 * 1024
RUN_PREFIX = "run-"
RUN_OWNER = "owner"  # "<host> <pid>" of the app process that made the run folder
LEGACY_RUN_AGE_S = (
    24 * 3600
)  # a run folder without an owner file (older versions) this long untouched is stale


# Triton's log when a port it was given is bound by then ("Socket '127.0.0.1:8001' already in use")
PORT_TAKEN_MEANWHILE = "already in use"


class ServerStartError(KitchenError):
    """The embedded server did not become ready; the message quotes the tail of its log. ``aborted``: it
    was killed by a signal during start-up (a crash, not a refused configuration)."""

    default_code = "server_start"

    def __init__(self, message: str, aborted: bool = False) -> None:
        super().__init__("server_start", message)
        self.aborted = aborted


def cache_root() -> Path:
    """Writable folder for the server copy, logs and traces (``TRITON_KITCHEN_CACHE`` overrides)."""
    path = settings().cache
    path.mkdir(parents=True, exist_ok=True)
    return path


def wheel_paths() -> tuple[Path, Path]:
    import pytriton

    pkg = Path(pytriton.__file__).resolve().parent
    return pkg / "tritonserver", pkg.parent / "nvidia_pytriton.libs"


def prepare_server_dir() -> Path:
    """Copy the wheel's tritonserver tree to the cache once and install the stub for this Python."""
    from importlib.metadata import version

    src, _ = wheel_paths()
    pyver = f"{sys.version_info.major}.{sys.version_info.minor}"
    dest = cache_root() / f"tritonserver-{version('nvidia-pytriton')}-py{pyver}"
    stub = dest / "backends" / "python" / "triton_python_backend_stub"
    if stub.exists():
        return dest
    tmp = Path(tempfile.mkdtemp(dir=cache_root(), prefix=".server-"))
    shutil.copytree(src / "bin", tmp / "bin")
    shutil.copytree(src / "backends", tmp / "backends")
    shutil.copytree(src / "caches", tmp / "caches")
    stub_src = src / "python_backend_stubs" / pyver / "triton_python_backend_stub"
    if not stub_src.exists():
        raise ServerStartError(f"nvidia-pytriton ships no Python backend stub for Python {pyver}")
    shutil.copy2(stub_src, tmp / "backends" / "python" / "triton_python_backend_stub")
    try:
        tmp.rename(dest)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def server_environment() -> dict[str, str]:
    """Environment for tritonserver and its Python stubs: wheel libraries, libpython, our packages."""
    _, libs = wheel_paths()
    env = dict(os.environ)
    lib_dirs = [str(libs), sysconfig.get_config_var("LIBDIR") or ""]
    env["LD_LIBRARY_PATH"] = os.pathsep.join([d for d in lib_dirs if d] + [env.get("LD_LIBRARY_PATH", "")])
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *site_dirs, env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    # The stub's embedded Python finds its prefix (and so a venv's site-packages) through the `python3` on PATH,
    # not through PYTHONPATH alone: without this, `.venv/bin/python app.py` from an unactivated shell gave the
    # models the base interpreter's packages (numpy 2, no onnxruntime).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``port`` (SO_REUSEADDR, as servers bind: TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# The app's one health probe, meaning *live* (see kserve.live: with strict readiness, one unloaded model
# makes the whole server "not ready" while it answers every other model).
probe_kserve = kserve.live


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _last_touched(folder: Path) -> float:
    try:
        return max(p.stat().st_mtime for p in [folder, *folder.iterdir()])
    except OSError:
        return time.time()


def prune_run_dirs(root: Path | None = None) -> list[Path]:
    """Remove the run folders of app processes on this host that no longer exist (killed, or ended
    without :meth:`EmbeddedServer.stop`); returns them. A folder without an owner file (made by an older
    version) goes when nothing in it changed for a day."""
    root = root or cache_root()
    host = socket.gethostname()
    removed = []
    for folder in sorted(root.glob(f"{RUN_PREFIX}*")):
        if not folder.is_dir():
            continue
        try:
            owner_host, pid = (folder / RUN_OWNER).read_text().split()
            stale = owner_host == host and not _process_exists(int(pid))
        except FileNotFoundError:
            stale = time.time() - _last_touched(folder) > LEGACY_RUN_AGE_S
        except (OSError, ValueError):  # being written right now, or not ours to judge
            continue
        if stale:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


class EmbeddedServer:
    """The real tritonserver binary on a model repository, as a child process group we own."""

    def __init__(
        self,
        repo: Path | str = DEFAULT_REPOSITORY,
        http_port: int = DEFAULT_PORTS["http"],
        grpc_port: int = DEFAULT_PORTS["grpc"],
        metrics_port: int = DEFAULT_PORTS["metrics"],
        load_models: str | list[str] | None = "*",
        extra_args: tuple[str, ...] | list[str] = (),
        host: str = "127.0.0.1",
        grace: float = 5.0,
        build_models: bool = True,
    ) -> None:
        self.repo = Path(repo).resolve()
        self.host = host
        self.requested_ports = {"http": http_port, "grpc": grpc_port, "metrics": metrics_port}
        self.ports: dict[str, int] = {}
        self.port_notes: list[str] = []
        self.load_models = load_models
        self.extra_args = list(extra_args)
        self.grace = grace
        self.build_models = build_models
        self.key = secrets.token_hex(16)
        # the folder itself is made by start() and removed by stop(): a server never started leaves nothing
        self.run_dir = cache_root() / f"{RUN_PREFIX}{secrets.token_hex(6)}"
        self.log_file = self.run_dir / "tritonserver.log"
        self.trace_file = self.run_dir / "trace.json"  # renamed per start: see _start
        self._starts = 0
        self._proc: subprocess.Popen | None = None
        self._lock = threading.RLock()  # one app process, many Streamlit sessions: start/stop one at a time
        self._started_once = False
        self.restarts = 0
        self.startup_seconds: float | None = None

    # -- addresses -------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        return f"{self.host}:{self.ports['http']}"

    @property
    def grpc_url(self) -> str:
        return f"{self.host}:{self.ports['grpc']}"

    @property
    def metrics_url(self) -> str:
        return f"{self.host}:{self.ports['metrics']}"

    @property
    def repo_key(self) -> dict[str, str]:
        """Headers that unlock the restricted repository and trace APIs (pass as ``headers=``)."""
        return {RESTRICTED_HEADER: self.key}

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.http_url, self.grpc_url, True, self.metrics_url, self.repo_key)

    @property
    def pid(self) -> int | None:
        """Process id of the supervisor; tritonserver is its child."""
        return self._proc.pid if self._proc else None

    # -- lifecycle -------------------------------------------------------------------------
    def _choose_ports(self) -> None:
        self.ports, self.port_notes = {}, []
        taken: set[int] = set()
        for name, wanted in self.requested_ports.items():
            port = wanted
            if not wanted or wanted in taken or not port_is_free(wanted, self.host):
                port = free_port(self.host)
                while port in taken:
                    port = free_port(self.host)
                if wanted:
                    self.port_notes.append(f"port {wanted} ({name}) is taken; using {port}")
            taken.add(port)
            self.ports[name] = port

    def command(self) -> list[str]:
        server_dir = prepare_server_dir()
        cmd = [
            str(server_dir / "bin" / "tritonserver"),
            f"--model-repository={self.repo}",
            f"--backend-directory={server_dir / 'backends'}",
            f"--cache-directory={server_dir / 'caches'}",
            f"--cache-config=local,size={RESPONSE_CACHE_BYTES}",
            "--model-control-mode=explicit",
            f"--http-address={self.host}",
            f"--grpc-address={self.host}",
            f"--metrics-address={self.host}",
            f"--http-port={self.ports['http']}",
            f"--grpc-port={self.ports['grpc']}",
            f"--metrics-port={self.ports['metrics']}",
            f"--http-restricted-api={RESTRICTED_CATEGORIES}:{RESTRICTED_HEADER}={self.key}",
            f"--grpc-restricted-protocol={RESTRICTED_CATEGORIES}:{RESTRICTED_HEADER}={self.key}",
            "--allow-gpu-metrics=false",
            "--strict-readiness=true",
            "--exit-timeout-secs=3",
            f"--trace-config=triton,file={self.trace_file}",
            "--trace-config=level=OFF",
            "--trace-config=rate=1",
            "--trace-config=triton,log-frequency=1",  # a mode setting; "log_frequency=1" alone is ignored
        ]
        if self.load_models == "*":
            cmd.append("--load-model=*")
        elif self.load_models:
            cmd += [f"--load-model={m}" for m in self.load_models]
        return cmd + self.extra_args

    def start(self, timeout: float = 60.0) -> Endpoint:
        """Start the server and wait until it is ready; raise ServerStartError with the log tail if not.
        A server aborted during start-up gets one more try (a log it wrote is kept as ``.log.previous``): Triton's python
        backend can abort on a busy machine (boost::interprocess::lock_exception, triton-inference-server#8882). So
        does one whose port was taken between our check and its bind (another app's Triton starting at that moment)."""
        with self._lock:
            if self.running:
                return self.endpoint
            self._make_run_dir()
            try:
                endpoint = self._start(timeout)
            except ServerStartError as exc:
                if not (exc.aborted or PORT_TAKEN_MEANWHILE in str(exc)):
                    raise
                endpoint = self._start(timeout)  # chooses its ports again: taken ones are replaced, and said
            self._started_once = True
            return endpoint

    def _make_run_dir(self) -> None:
        if self.run_dir.is_dir():
            return  # a restart after a crash or a failed start: the last log stays beside the new one
        prune_run_dirs(self.run_dir.parent)
        self.run_dir.mkdir(parents=True)
        (self.run_dir / RUN_OWNER).write_text(f"{socket.gethostname()} {os.getpid()}\n")

    @property
    def died(self) -> bool:
        """True when the server was started and its process is gone (killed, crashed) without stop()."""
        return self._started_once and not self.running

    def ensure_running(self, timeout: float = 60.0) -> bool:
        """Restart the server if it died; True when a restart happened."""
        with self._lock:
            if not self.died:
                return False
            self._stop_process()  # gone already: this closes our end of its stdin
            self.restarts += 1
            self.start(timeout)
            return True

    def _start(self, timeout: float) -> Endpoint:
        t0 = time.monotonic()
        if self.build_models:
            from triton_kitchen.models.build import ensure_onnx

            ensure_onnx(self.repo)
        self._choose_ports()
        # A fresh trace base per process: a restarted tritonserver numbers its files from .0 again, and
        # readers that remember the file names they had seen would skip the new server's traces.
        self._starts += 1
        self.trace_file = self.run_dir / f"trace-{self._starts}.json"
        cmd = self.command()
        if self.log_file.exists() and self.log_file.stat().st_size:
            self.log_file.replace(self.log_file.with_suffix(".log.previous"))  # keep why the last one ended
        self.log_file.write_bytes(b"")
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "triton_kitchen.core._supervise",
                str(self.log_file),
                str(self.grace),
                "--",
                *cmd,
            ],
            stdin=subprocess.PIPE,
            env=server_environment(),
            cwd=str(self.run_dir),
        )
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            rc = self._proc.poll()
            if rc is not None:
                self._stop_process()
                # the supervisor exits with tritonserver's status; a signal shows as negative or 128+N
                raise self._failure("tritonserver exited during start-up:", aborted=rc < 0 or rc > 128)
            # the metrics service starts a moment after HTTP: wait for both, so a first scrape finds it; and both
            # must be this server's (another app's Triton, started at the same moment, may have taken a port
            # between our check and our bind: then ours exits and must not be called ready): our log says our
            # metrics service started, and the server on our HTTP port takes our repository key
            if (
                probe_kserve(self.http_url, timeout=0.5)
                and self._metrics_started()
                and self._answers_with_our_key()
            ):
                self.startup_seconds = time.monotonic() - t0
                return self.endpoint
            time.sleep(0.1)
        self._stop_process()  # the log stays for the message (and the folder until stop())
        raise self._failure(f"tritonserver was not ready after {timeout:.0f} s:")

    def _metrics_started(self) -> bool:
        """Our tritonserver's log says its metrics service listens on our metrics port (Triton starts it last)."""
        try:
            log = self.log_file.read_text(errors="replace")
        except OSError:
            return False
        return f"Started Metrics Service at {self.host}:{self.ports['metrics']}" in log  # --metrics-address

    def _answers_with_our_key(self) -> bool:
        """The server on our HTTP port accepts this server's repository key (only the process we started has it)."""
        try:
            kserve.repository_index(self.endpoint, headers=self.repo_key, timeout=1.0)
        except kserve.KServeError:
            return False
        return True

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Stop tritonserver and its Python stubs (terminate, then kill after the grace period), and remove
        the run folder with its log and traces."""
        self._stop_process()
        with self._lock:
            if self._proc is None:  # not started again meanwhile
                shutil.rmtree(self.run_dir, ignore_errors=True)

    def _stop_process(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
            self._started_once = False
        if proc is None:
            return
        if proc.stdin:
            try:
                proc.stdin.close()  # the supervisor sees EOF and stops the process group
            except OSError:
                pass
        try:
            proc.wait(timeout=self.grace + 5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self, timeout: float = 60.0) -> Endpoint:
        """Stop and start again; the run folder stays, so the last run's log is kept as ``.log.previous``."""
        self._stop_process()
        return self.start(timeout)

    def log_errors(self, limit: int = 10) -> str:
        """Triton's error lines (``E...``) from the log, the reasons a start or a load failed."""
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        errors = [
            line for line in text.splitlines() if re.match(r"E\d{4} ", line) and "CudaDriver" not in line
        ]
        return "\n".join(line[:600] for line in errors[-limit:])

    def _failure(self, headline: str, aborted: bool = False) -> ServerStartError:
        text = f"{headline}\n{self.log_errors()}\n--- log tail ---\n{self.log_tail(15)}"
        return ServerStartError(text, aborted=aborted)

    def log_tail(self, lines: int = 50) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
