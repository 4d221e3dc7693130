"""Chapter 7's "clients that give up" drills, on a small server of their own (core.drill_server), never the
class's server.

:func:`give_up` runs one scenario on ``slow_drill`` (one instance, it sleeps MS ms per request): a first request
``A`` occupies the instance for :data:`BUSY_MS`; in the queued scenarios a second request ``B`` waits behind it
and the client gives up on ``B`` (cancels it, lets its deadline pass, closes its HTTP connection, or asks for a
per-request ``timeout=``); in the executing scenarios the client gives up on ``A`` itself while the model runs
it. Triton's own statistics (``execution_count``, ``compute_infer``) then say whether the request the client gave
up on ran, and for how long: the verdict comes from them, not from the client's side.

Measured on 2.51: a gRPC cancellation or deadline of a queued request always spared it; a closed HTTP connection
(or tritonclient.http's ``network_timeout``) mostly did not (a closed connection spared it 1 time in 7, network_timeout 0 in 6), as Triton notices the close late.

:func:`what_each_client_raises` makes the same failures happen to tritonclient.grpc and tritonclient.http (a
deadline, a full queue, a stopped server) and records the exception each raises, and a retry on UNAVAILABLE.
"""

from __future__ import annotations

import copy
import http.client
import json
import threading
import time
from dataclasses import dataclass, field

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import SLOW_DRILL
from triton_kitchen.core.drill_server import own_server, slow_inputs
from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.core.errors import KitchenError

MODEL = SLOW_DRILL
BUSY_MS = 800  # how long the request in execute sleeps
QUEUED_MS = 800  # how long the queued request would sleep if it ran
GIVE_UP_AFTER_S = 0.2  # the client gives up this long after sending
MIN_DEADLINE_S = 0.05  # a client deadline shorter than this is refused before anything is sent
MAX_DEADLINE_S = 5.0
QUIET_S = 0.3  # statistics unchanged this long: every request has finished

# scenario -> (protocol, who is given up on: "queued" or "executing")
SCENARIOS: dict[str, tuple[str, str]] = {
    "grpc_cancel_queued": ("grpc", "queued"),
    "grpc_deadline_queued": ("grpc", "queued"),
    "http_close_queued": ("http", "queued"),
    "http_timeout_queued": ("http", "queued"),
    "request_timeout_queued": ("grpc", "queued"),
    "request_timeout_override": ("grpc", "queued"),
    "grpc_cancel_executing": ("grpc", "executing"),
    "grpc_cancel_executing_poll": ("grpc", "executing"),
}


class GivingUpError(KitchenError):
    """A scenario or a deadline the drill does not allow (``bad_settings``, ``bad_deadline``)."""

    source = "giving_up"


@dataclass
class Stats:
    executions: int
    compute_ms: float


@dataclass
class GiveUpResult:
    scenario: str
    deadline_s: float
    executions: int = 0  # the model's execution_count delta over the whole scenario
    compute_ms: float = 0.0  # its compute_infer delta
    busy_slept_ms: int | None = None  # what A's answer said it slept (the queued scenarios)
    client_saw: str = ""  # what the client got for the request it gave up on (exception class and text)
    client_ms: float = 0.0  # from sending that request until the client had its answer or error
    notes: list[str] = field(default_factory=list)
    busy_end_s: float | None = None  # the queued scenarios: A's answer, seconds after the victim was sent

    @property
    def given_up(self) -> str:
        return SCENARIOS[self.scenario][1]

    def victim_ms(self) -> float | None:
        """How long the request the client gave up on ran in the model (None: it never ran)."""
        if self.given_up == "executing":
            return self.compute_ms if self.executions >= 1 else None
        if self.executions < 2:
            return None
        return max(self.compute_ms - (self.busy_slept_ms or BUSY_MS), 0.0)

    def outcome(self) -> str | None:
        """``never_ran``, ``ran_to_end`` or ``stopped_early`` (None: the counts make no sense, e.g. another run)."""
        expected = 1 if self.given_up == "executing" else 2
        if self.executions > expected or self.executions < expected - 1:
            return None
        ran = self.victim_ms()
        if ran is None:
            return "never_ran"
        full = BUSY_MS if self.given_up == "executing" else QUEUED_MS
        return "ran_to_end" if ran >= 0.8 * full else "stopped_early"


def check_deadline(deadline_s: float) -> float:
    """A client deadline the drill can use; raises GivingUpError(bad_deadline) for 0, negative or absurd ones."""
    try:
        value = float(deadline_s)
    except (TypeError, ValueError) as exc:
        raise GivingUpError("bad_deadline", f"deadline {deadline_s!r} is not a number") from exc
    if not MIN_DEADLINE_S <= value <= MAX_DEADLINE_S:
        raise GivingUpError(
            "bad_deadline", f"deadline {value:g} s is outside {MIN_DEADLINE_S:g}..{MAX_DEADLINE_S:g} s"
        )
    return value


def _stats(ep: Endpoint) -> Stats:
    s = kserve.statistics(ep, MODEL)["model_stats"][0]
    return Stats(int(s.get("execution_count", 0)), s["inference_stats"]["compute_infer"]["ns"] / 1e6)


def _quiet(ep: Endpoint, still_s: float = QUIET_S, at_least: int = 0, timeout_s: float = 10.0) -> Stats:
    """The statistics once ``execution_count`` has reached ``at_least`` and nothing changed for ``still_s``:
    Triton counts an execution when it ends, so ``still_s`` must outlast the longest one that may still run."""
    deadline = time.monotonic() + timeout_s
    last = _stats(ep)
    while last.executions < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
        last = _stats(ep)
    while time.monotonic() < deadline:
        time.sleep(still_s)
        now = _stats(ep)
        if now == last:
            return now
        last = now
    return last


class _Answer:
    """One async gRPC answer: set by the callback, waited for by the drill."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result = None
        self.error: grpcclient.InferenceServerException | None = None
        self.at = 0.0

    def __call__(self, result, error) -> None:  # tritonclient calls it with these keyword names
        self.result, self.error, self.at = result, error, time.perf_counter()
        self.done.set()


def _grpc_text(exc: Exception) -> str:
    if isinstance(exc, grpcclient.InferenceServerException):
        return f"InferenceServerException {exc.status()}: {exc.message()}"
    return f"{type(exc).__name__}: {exc}"


def _http_text(exc: Exception) -> str:
    if isinstance(exc, httpclient.InferenceServerException):
        return f"InferenceServerException {exc.status()}: {exc.message()}"
    return f"{type(exc).__name__}: {exc}"


def _json_body(ms: int) -> str:
    return json.dumps(
        {
            "inputs": [
                {"name": "MS", "shape": [1, 1], "datatype": "INT32", "data": [ms]},
                {"name": "POLL", "shape": [1, 1], "datatype": "BOOL", "data": [False]},
            ]
        }
    )


def _queued(ep: Endpoint, scenario: str, deadline_s: float, result: GiveUpResult) -> None:
    """A occupies the instance; B waits behind it and the client gives up on B the scenario's way."""
    client = grpcclient.InferenceServerClient(ep.grpc_url)
    try:
        busy = _Answer()
        client.async_infer(MODEL, slow_inputs(BUSY_MS), busy)
        time.sleep(0.05)  # A is in execute before B is sent
        t0 = time.perf_counter()
        if scenario == "grpc_cancel_queued":
            victim = _Answer()
            ctx = client.async_infer(MODEL, slow_inputs(QUEUED_MS), victim)
            time.sleep(deadline_s)
            ctx.cancel()
            victim.done.wait(5.0)
            result.client_saw = _grpc_text(victim.error) if victim.error else "answered"
            result.client_ms = (victim.at - t0) * 1000
        elif scenario == "grpc_deadline_queued":
            try:
                client.infer(MODEL, slow_inputs(QUEUED_MS), client_timeout=deadline_s)
                result.client_saw = "answered"
            except grpcclient.InferenceServerException as exc:
                result.client_saw = _grpc_text(exc)
            result.client_ms = (time.perf_counter() - t0) * 1000
        elif scenario in ("request_timeout_queued", "request_timeout_override"):
            try:  # timeout= is in microseconds: a server queue timeout, not a client deadline
                client.infer(MODEL, slow_inputs(QUEUED_MS), timeout=int(deadline_s * 1_000_000))
                result.client_saw = "answered"
            except grpcclient.InferenceServerException as exc:
                result.client_saw = _grpc_text(exc)
            result.client_ms = (time.perf_counter() - t0) * 1000
        elif scenario == "http_close_queued":
            host, port = split_host_port(ep.http_url)
            conn = http.client.HTTPConnection(host, port, timeout=5.0)
            conn.request(
                "POST",
                f"/v2/models/{MODEL}/infer",
                _json_body(QUEUED_MS),
                {"Content-Type": "application/json"},
            )
            time.sleep(deadline_s)
            conn.close()
            result.client_saw = "connection closed by the client"
            result.client_ms = (time.perf_counter() - t0) * 1000
        elif scenario == "http_timeout_queued":
            hclient = httpclient.InferenceServerClient(ep.http_url, network_timeout=deadline_s)
            try:
                hclient.infer(MODEL, slow_inputs(QUEUED_MS, module=httpclient))
                result.client_saw = "answered"
            except Exception as exc:  # noqa: BLE001 - which class it is is the measurement
                result.client_saw = _http_text(exc)
            finally:
                result.client_ms = (time.perf_counter() - t0) * 1000
                hclient.close()
        busy.done.wait(10.0)
        if busy.result is not None:
            result.busy_slept_ms = int(busy.result.as_numpy("SLEPT_MS").reshape(-1)[0])
            result.busy_end_s = busy.at - t0
    finally:
        client.close()


def _executing(ep: Endpoint, scenario: str, deadline_s: float, result: GiveUpResult) -> None:
    """A is in execute when the client cancels it."""
    client = grpcclient.InferenceServerClient(ep.grpc_url)
    try:
        victim = _Answer()
        t0 = time.perf_counter()
        ctx = client.async_infer(MODEL, slow_inputs(BUSY_MS, poll=scenario.endswith("_poll")), victim)
        time.sleep(deadline_s)
        ctx.cancel()
        victim.done.wait(5.0)
        result.client_saw = _grpc_text(victim.error) if victim.error else "answered"
        result.client_ms = (victim.at - t0) * 1000
    finally:
        client.close()


def _victim_went_first(result: GiveUpResult) -> bool:
    """A (the busy request) answered so late that the victim B must have run before it: B reached the instance
    first, so it never waited in the queue. A ahead of B ends about BUSY_MS after B was sent; behind a B that ran,
    BUSY_MS + QUEUED_MS after (the threshold leaves half of QUEUED_MS for a loaded machine's delays)."""
    if result.busy_end_s is None:
        return False
    return result.busy_end_s * 1000 > BUSY_MS + QUEUED_MS / 2


def _override_config(ep: Endpoint) -> dict:
    """slow_drill's config with a 10 s default queue timeout that a request may shorten (chapter 9's rule)."""
    cfg = copy.deepcopy(kserve.model_config(ep, MODEL))
    cfg.setdefault("dynamic_batching", {})["default_queue_policy"] = {
        "max_queue_size": 8,
        "default_timeout_microseconds": 10_000_000,
        "allow_timeout_override": True,
        "timeout_action": "REJECT",
    }
    return cfg


def give_up(scenario: str, deadline_s: float = GIVE_UP_AFTER_S) -> GiveUpResult:
    """Run one scenario on a server of its own (about 4 to 6 s). Raises GivingUpError for a scenario or deadline
    it does not know, ServerStartError when its server does not start."""
    if scenario not in SCENARIOS:
        raise GivingUpError("bad_settings", f"scenario must be one of {', '.join(SCENARIOS)}")
    deadline_s = check_deadline(deadline_s)
    result = GiveUpResult(scenario, deadline_s)
    with own_server([MODEL]) as srv:
        ep = srv.endpoint
        if scenario == "request_timeout_override":
            kserve.load_model(ep, MODEL, _override_config(ep), headers=ep.headers)
        warm = grpcclient.InferenceServerClient(ep.grpc_url)
        try:  # a stub's first request (and first is_cancelled()) is slower: not part of the measurement
            warm.infer(MODEL, slow_inputs(0, poll=True), client_timeout=10.0)
        finally:
            warm.close()
        before = _quiet(ep)
        if SCENARIOS[scenario][1] == "queued":
            _queued(ep, scenario, deadline_s, result)
            if _victim_went_first(result):  # on a loaded machine A can reach the server after B: once more
                before = _quiet(ep, still_s=QUEUED_MS / 1000 + 0.2, at_least=before.executions + 1)
                result = GiveUpResult(scenario, deadline_s)
                _queued(ep, scenario, deadline_s, result)
        else:
            _executing(ep, scenario, deadline_s, result)
        # at least one execution (the busy request, or the one cancelled in execute) has ended, and none for
        # longer than a queued request would take: one that was given up on and still ran is counted too
        after = _quiet(ep, still_s=QUEUED_MS / 1000 + 0.2, at_least=before.executions + 1)
        result.executions = after.executions - before.executions
        result.compute_ms = after.compute_ms - before.compute_ms
    return result


# -- what each client raises -----------------------------------------------------------------------------------
FAILURES = ("deadline", "queue_full", "server_stopped")


@dataclass
class Raised:
    failure: str
    protocol: str
    raised: str  # exception class, status and message, as the client gave them


@dataclass
class RaisedTable:
    rows: list[Raised] = field(default_factory=list)
    retry_sent: int = 0
    retry_answered: int = 0
    retry_tries: int = 0  # tries in all, the first ones included

    def of(self, failure: str, protocol: str) -> str:
        return next((r.raised for r in self.rows if r.failure == failure and r.protocol == protocol), "")


def infer_with_retry(client, inputs: list, tries: int = 5, backoff_s: float = 0.1) -> tuple[object, int]:
    """gRPC infer that tries again on UNAVAILABLE (a full queue), waiting longer each time; (result, tries)."""
    for attempt in range(1, tries + 1):
        try:
            return client.infer(MODEL, inputs, client_timeout=10.0), attempt
        except grpcclient.InferenceServerException as exc:
            if exc.status() != "StatusCode.UNAVAILABLE" or attempt == tries:
                raise
            time.sleep(backoff_s * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _flood(ep: Endpoint, n: int, call) -> list[str]:
    """``n`` threads calling at once; each one's outcome ("ok" or the error text)."""
    out = [""] * n

    def one(i: int) -> None:
        try:
            call()
            out[i] = "ok"
        except Exception as exc:  # noqa: BLE001 - the exception is the measurement
            out[i] = (
                _grpc_text(exc) if isinstance(exc, grpcclient.InferenceServerException) else _http_text(exc)
            )

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=15)
    return out


def what_each_client_raises(deadline_s: float = GIVE_UP_AFTER_S) -> RaisedTable:
    """Each failure of FAILURES over gRPC and HTTP, measured on a server of its own (about 6 s)."""
    deadline_s = check_deadline(deadline_s)
    table = RaisedTable()
    with own_server([MODEL], wait_for_stop=True) as srv:  # the server_stopped rows need it gone
        ep = srv.endpoint
        cfg = copy.deepcopy(kserve.model_config(ep, MODEL))
        cfg["dynamic_batching"]["default_queue_policy"] = {"max_queue_size": 1}
        kserve.load_model(ep, MODEL, cfg, headers=ep.headers)
        g = grpcclient.InferenceServerClient(ep.grpc_url)
        h = httpclient.InferenceServerClient(ep.http_url, network_timeout=deadline_s, concurrency=4)
        try:
            for protocol, call in (
                ("grpc", lambda: g.infer(MODEL, slow_inputs(400), client_timeout=deadline_s)),
                ("http", lambda: h.infer(MODEL, slow_inputs(400, module=httpclient))),
            ):
                raised = _flood(ep, 1, call)[0]
                table.rows.append(Raised("deadline", protocol, raised))
                _quiet(ep)
            # one executing, one queued, the rest refused: max_queue_size 1
            for protocol, make in (
                ("grpc", lambda: grpcclient.InferenceServerClient(ep.grpc_url)),
                ("http", lambda: httpclient.InferenceServerClient(ep.http_url)),
            ):
                module = grpcclient if protocol == "grpc" else httpclient
                outcomes = _flood(
                    ep, 4, lambda m=module, mk=make: mk().infer(MODEL, slow_inputs(300, module=m))
                )
                refused = [o for o in outcomes if o != "ok"]
                table.rows.append(Raised("queue_full", protocol, refused[0] if refused else "ok"))
                _quiet(ep)
            tries: list[int] = []
            lock = threading.Lock()

            def retried() -> None:
                _, n = infer_with_retry(
                    grpcclient.InferenceServerClient(ep.grpc_url), slow_inputs(300), tries=8
                )
                with lock:
                    tries.append(n)

            outcomes = _flood(ep, 4, retried)
            table.retry_sent, table.retry_answered, table.retry_tries = 4, outcomes.count("ok"), sum(tries)
        finally:
            g.close()
            h.close()
        address = ep
    for protocol, call in (
        ("grpc", lambda: grpcclient.InferenceServerClient(address.grpc_url).infer(MODEL, slow_inputs(1))),
        ("http", lambda: httpclient.InferenceServerClient(address.http_url).infer(
            MODEL, slow_inputs(1, module=httpclient))),
    ):  # fmt: skip
        table.rows.append(Raised("server_stopped", protocol, _flood(address, 1, call)[0]))
    return table
