"""Chapter 10's health drills, each on a small server of its own (drill_repository/), never the class's server.

- :func:`kill_a_stub`: ``slow_drill`` with two instances (two Python stub processes). Read the three health
  answers (``/v2/health/live``, ``/v2/health/ready``, the model's ``/v2/models/<name>/ready``), send requests,
  kill one stub with SIGKILL, read the three answers again and send requests again: in Triton 2.51 all three
  still say 200 while the requests that reach the dead instance fail with "Stub process '<instance>' is not
  healthy." (python_backend r24.10 ``src/stub_launcher.cc``). Then a load with nothing changed (does it bring the
  stub back?) and an unload + load (it does). The server is stopped at the end: nothing of the class's is touched.
- :func:`start_with_a_broken_model`: a server asked to load ``slow_drill`` and ``broken_drill`` (whose
  ``initialize`` raises) under one of three flag settings: Triton's defaults (``--exit-on-error=true``,
  ``--strict-readiness=true``: the server exits), ``--exit-on-error=false`` (it starts; ready says 400, the
  broken model is UNAVAILABLE) and both false (ready says 200 although a model is missing).

The stubs' pids come from the model's own answers (``slow_drill`` answers with ``os.getpid()``); before a pid is
killed, /proc must show a Python stub whose grandparent is this drill's supervisor (Linux only).
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import tritonclient.grpc as grpcclient

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import BROKEN_DRILL, SLOW_DRILL
from triton_kitchen.core.drill_server import own_server, slow_inputs
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import EmbeddedServer, ServerStartError

MODEL = SLOW_DRILL
BROKEN = BROKEN_DRILL
INSTANCES = 2
CALL_MS = 20  # each request sleeps this long in the model
CLIENTS = 2  # client threads sending requests during a window
WINDOW_S = 0.4  # a window of requests while every stub lives
DEAD_WINDOW_S = 1.6  # after the kill: a request that reaches the dead stub waits about 1 s before it fails
SAME_LOAD_WINDOW_S = (
    1.2  # after a load with nothing changed: long enough for one request to reach the dead stub
)
STUB_NAME = "triton_python_backend_stub"

# what each flag setting of the start-up drill passes to tritonserver
SETTINGS: dict[str, tuple[str, ...]] = {
    "defaults": ("--exit-on-error=true", "--strict-readiness=true"),
    "keep_going": ("--exit-on-error=false", "--strict-readiness=true"),
    "keep_going_lenient": ("--exit-on-error=false", "--strict-readiness=false"),
}


class HealthDrillError(KitchenError):
    """The drill could not run: a stub that could not be found or checked (``no_stub``), a setting that is not
    one of SETTINGS (``bad_settings``)."""

    source = "health"


@dataclass
class Health:
    """The HTTP status of the three health answers: 200 or 400 (a not-ready answer), 0 when nothing answered."""

    live: int
    ready: int
    model: int

    def all_ok(self) -> bool:
        return self.live == self.ready == self.model == 200


def probe_decisions(health: Health) -> tuple[str, str]:
    """What Kubernetes does with these answers: the liveness probe on /v2/health/live (``keep`` or ``restart``
    the container), the readiness probe on /v2/health/ready (``serve``: the Pod stays in the Service, or
    ``remove``)."""
    return ("keep" if health.live == 200 else "restart", "serve" if health.ready == 200 else "remove")


@dataclass
class Call:
    start_s: float
    ms: float
    pid: int | None = None  # the stub that answered
    error: str = ""  # Triton's text when it failed


@dataclass
class Stub:
    instance: str  # Triton's instance name, e.g. slow_drill_0_0
    pid: int


def _summary(calls: list[Call]) -> dict:
    failed = [c for c in calls if c.error]
    return {
        "sent": len(calls),
        "failed": len(failed),
        "by_pid": dict(Counter(c.pid for c in calls if not c.error)),
        "errors": dict(Counter(c.error for c in failed)),
        "slowest_failure_ms": max((c.ms for c in failed), default=None),
    }


@dataclass
class StubDrill:
    stubs: list[Stub] = field(default_factory=list)
    killed: Stub | None = None
    before: Health | None = None
    calls_before: list[Call] = field(default_factory=list)
    after: Health | None = None  # read right after the kill, before any request
    calls_after: list[Call] = field(default_factory=list)
    after_calls: Health | None = None  # read again after the failing requests
    calls_after_same_load: list[Call] = field(default_factory=list)  # after a load with nothing changed
    same_load_ms: float = 0.0  # how long that load took
    calls_after_reload: list[Call] = field(default_factory=list)  # after unload + load
    reload_ms: float = 0.0

    def summary(self, which: str) -> dict:
        return _summary(getattr(self, f"calls_{which}"))

    def outcome(self) -> str:
        """What the student predicts: which health answers changed after the kill (read twice)."""
        reads = [h for h in (self.after, self.after_calls) if h is not None]
        if any(h.live != 200 for h in reads):
            return "live_fails"
        if any(h.ready != 200 for h in reads):
            return "ready_400"
        if any(h.model != 200 for h in reads):
            return "model_400"
        return "all_200"


@dataclass
class StartupResult:
    setting: str
    started: bool
    failure: list[str] = field(default_factory=list)  # the log's error lines when the server exited
    health: Health | None = None  # model: broken_drill's readiness
    drill_ready: int = 0  # slow_drill's readiness (it loaded)
    broken_body: str = ""  # the not-ready answer's body
    index: list[dict] = field(default_factory=list)  # the repository index: state and reason per model

    def outcome(self) -> str:
        if not self.started:
            return "no_server"
        return "up_ready" if self.health and self.health.ready == 200 else "up_not_ready"


# -- the drill's own server
def _status(ep: Endpoint, path: str) -> tuple[int, str]:
    try:
        code, body = kserve.request(ep, "GET", path, timeout=2.0)
    except kserve.KServeError:
        return 0, ""
    return code, body.decode(errors="replace")


def read_health(ep: Endpoint, model: str = MODEL) -> Health:
    return Health(
        _status(ep, "/v2/health/live")[0],
        _status(ep, "/v2/health/ready")[0],
        _status(ep, f"/v2/models/{model}/ready")[0],
    )


def _window(ep: Endpoint, seconds: float, clients: int = CLIENTS) -> list[Call]:
    """``clients`` threads calling the model without pause for ``seconds``; every call recorded."""
    calls: list[Call] = []
    lock = threading.Lock()
    t0 = time.perf_counter()

    def loop() -> None:
        client = grpcclient.InferenceServerClient(ep.grpc_url)
        try:
            while time.perf_counter() - t0 < seconds:
                start = time.perf_counter()
                try:
                    result = client.infer(MODEL, slow_inputs(CALL_MS), client_timeout=10.0)
                    call = Call(start - t0, 0.0, pid=int(result.as_numpy("PID").reshape(-1)[0]))
                except grpcclient.InferenceServerException as exc:
                    call = Call(start - t0, 0.0, error=exc.message() or str(exc))
                call.ms = (time.perf_counter() - start) * 1000
                with lock:
                    calls.append(call)
        finally:
            client.close()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=seconds + 15)
    return sorted(calls, key=lambda c: c.start_s)


def _proc_stat(pid: int) -> tuple[str, int]:
    """(command name, parent pid) from /proc/<pid>/stat."""
    text = Path(f"/proc/{pid}/stat").read_text()
    name = text[text.index("(") + 1 : text.rindex(")")]
    return name, int(text[text.rindex(")") + 2 :].split()[1])


def stub_of(pid: int, server: EmbeddedServer) -> Stub:
    """The stub process ``pid``, checked to be a Python stub of ``server`` (its tritonserver's child); raises
    HealthDrillError otherwise. Its instance name is read from its command line."""
    try:
        name, parent = _proc_stat(pid)
        _, grandparent = _proc_stat(parent)
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except (OSError, ValueError, IndexError) as exc:
        raise HealthDrillError("no_stub", f"pid {pid}: cannot read /proc ({exc})") from exc
    if not STUB_NAME.startswith(name) or grandparent != server.pid:
        raise HealthDrillError("no_stub", f"pid {pid} ({name}) is not a stub of this drill's server")
    instance = next((a for a in args if a.startswith(f"{MODEL}_")), "?")
    return Stub(instance, pid)


def _gone(pid: int) -> bool:
    try:
        name, _ = _proc_stat(pid)
        return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") >= 0 or not name
    except OSError:
        return True


def _config(ep: Endpoint, instances: int) -> dict:
    cfg = copy.deepcopy(kserve.model_config(ep, MODEL))
    cfg["instance_group"] = [{"kind": "KIND_CPU", "count": instances}]
    return cfg


def kill_a_stub(instances: int = INSTANCES) -> StubDrill:
    """The whole drill on a server of its own (about 10 s). Raises HealthDrillError or ServerStartError."""
    drill = StubDrill()
    with own_server([MODEL]) as srv:
        ep = srv.endpoint
        two = _config(ep, instances)
        kserve.load_model(ep, MODEL, two, headers=ep.headers)  # only the count changed: Triton adds a stub
        drill.before = read_health(ep)
        drill.calls_before = _window(ep, WINDOW_S)
        pids = sorted({c.pid for c in drill.calls_before if c.pid})
        drill.stubs = [stub_of(pid, srv) for pid in pids]
        if len(drill.stubs) < 2:
            raise HealthDrillError("no_stub", f"the requests reached {len(pids)} stub(s), not {instances}")
        drill.killed = drill.stubs[0]
        os.kill(drill.killed.pid, signal.SIGKILL)
        deadline = time.monotonic() + 3.0
        while not _gone(drill.killed.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        drill.after = read_health(ep)
        drill.calls_after = _window(ep, DEAD_WINDOW_S)
        drill.after_calls = read_health(ep)
        t0 = time.perf_counter()
        kserve.load_model(ep, MODEL, two, headers=ep.headers)  # the same config: nothing changed
        drill.same_load_ms = (time.perf_counter() - t0) * 1000
        drill.calls_after_same_load = _window(ep, SAME_LOAD_WINDOW_S)
        t0 = time.perf_counter()
        kserve.unload_model(ep, MODEL, headers=ep.headers)
        kserve.load_model(ep, MODEL, two, headers=ep.headers)
        drill.reload_ms = (time.perf_counter() - t0) * 1000
        drill.calls_after_reload = _window(ep, WINDOW_S)
    return drill


def _failure_lines(text: str) -> list[str]:
    keep = ("failed to load", "error:", "unavailable", "exiting")
    lines = [line.strip() for line in text.splitlines() if any(k in line.lower() for k in keep)]
    return list(dict.fromkeys(lines))[:8]


def start_with_a_broken_model(setting: str) -> StartupResult:
    """Start a server of its own that must load slow_drill and broken_drill under ``setting`` (a key of
    SETTINGS); what it did. Raises HealthDrillError for an unknown setting."""
    if setting not in SETTINGS:
        raise HealthDrillError("bad_settings", f"setting must be one of {', '.join(SETTINGS)}")
    result = StartupResult(setting, started=False)
    try:
        with own_server([MODEL, BROKEN], SETTINGS[setting]) as srv:
            ep = srv.endpoint
            result.started = True
            result.health = read_health(ep, BROKEN)
            result.drill_ready = _status(ep, f"/v2/models/{MODEL}/ready")[0]
            result.broken_body = _status(ep, f"/v2/models/{BROKEN}/ready")[1]
            result.index = kserve.repository_index(ep, headers=ep.headers, timeout=5.0)
    except ServerStartError as exc:
        if "exited during start-up" not in str(exc):
            raise
        result.failure = _failure_lines(str(exc))
    return result


@dataclass
class ExitRead:
    """What a server that got SIGTERM says while a request is still in flight."""

    http_ready: str  # "HTTP <code>" or the connection error
    grpc_live: str  # "True"/"False" or the gRPC error
    in_flight_slept_ms: int | None  # the in-flight request's answer (None: it failed)


def while_exiting(in_flight_ms: int = 2000) -> ExitRead:
    """SIGTERM to a server of its own while one request runs ``in_flight_ms``; its health answers meanwhile."""
    with own_server([MODEL], ("--exit-timeout-secs=5",)) as srv:
        ep = srv.endpoint
        triton = next(
            pid
            for pid in (int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit())
            if _safe_stat(pid) == ("tritonserver", srv.pid)
        )
        client = grpcclient.InferenceServerClient(ep.grpc_url)
        answer: dict = {}

        def call() -> None:
            try:
                result = client.infer(
                    MODEL, slow_inputs(in_flight_ms), client_timeout=in_flight_ms / 1000 + 10
                )
                answer["slept"] = int(result.as_numpy("SLEPT_MS").reshape(-1)[0])
            except grpcclient.InferenceServerException:
                answer["slept"] = None

        th = threading.Thread(target=call, daemon=True)
        th.start()
        time.sleep(0.3)
        os.kill(triton, signal.SIGTERM)
        time.sleep(0.3)
        try:
            code, _ = kserve.request(ep, "GET", "/v2/health/ready", timeout=1.0)
            http_ready = f"HTTP {code}"
        except kserve.KServeError as exc:
            http_ready = exc.detail
        try:
            grpc_live = str(grpcclient.InferenceServerClient(ep.grpc_url).is_server_live())
        except grpcclient.InferenceServerException as exc:
            grpc_live = f"{exc.status()}: {exc.message()}"
        th.join(in_flight_ms / 1000 + 10)
        client.close()
        return ExitRead(http_ready, grpc_live, answer.get("slept"))


def _safe_stat(pid: int) -> tuple[str, int] | None:
    try:
        return _proc_stat(pid)
    except (OSError, ValueError, IndexError):
        return None
