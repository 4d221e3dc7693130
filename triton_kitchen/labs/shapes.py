"""Shapes that never batch (chapter 9) and the Python backend from the inside (chapter 3), on the shapes drill.

The drill models (``model_repository/shapes_*``) score rows of any length: every call costs a fixed 20 ms plus one
vectorised numpy call on the whole batch, and each answer says which call served it (the stub's pid, the call's
number in that stub, ``len(requests)`` of that call, the width it padded to).

* :func:`compare_shapes`: N closed-loop clients, each sending rows of its own lengths, under each way of sending
  them (as they are, padded, ragged, bucketed on one model, one model per bucket). Each run's throughput, and
  Triton's own counts over it (executions, inferences, the batch-size histogram from the statistics API).
* :func:`inside_burst`: many equal requests at once to ``shapes_drill`` (two instances), and, from the answers,
  each ``execute`` call: which stub ran it and how many requests its list held.
* :func:`stubs`: the running Python stubs of a model (embedded server only): pid, instance, shared-memory region.

Each result has ``outcome()`` for predict-then-see. Numbers are measured; nothing here is simulated.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

from triton_kitchen.core import clients, kserve
from triton_kitchen.core.catalog import SHAPES_BUCKET_LONG, SHAPES_BUCKET_SHORT, SHAPES_DRILL, SHAPES_RAGGED
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.on_demand import ensure_loaded

INPUT, OUTPUTS = "tokens", ("score", "call")
LONGEST = 128  # the longest row a client sends (the long bucket's width)
BUCKETS = (
    (64, SHAPES_BUCKET_SHORT),
    (LONGEST, SHAPES_BUCKET_LONG),
)  # width, model: a row goes to the first that fits
MAX_PAD = 1024
MAX_CLIENTS = 16
RUN_S = 1.5
SETTLE_S = 0.3  # Triton counts a request a moment after its answer has left
# The ways of sending the same rows, in the order the page shows them
DRILL_MODELS = (SHAPES_DRILL, SHAPES_RAGGED, SHAPES_BUCKET_SHORT, SHAPES_BUCKET_LONG)
WAYS = ("unequal", "padded", "ragged", "buckets_one_model", "buckets")
STUB = "triton_python_backend_stub"
INSIDE_BURST = 24  # more than max_batch_size (16): at least two calls, so both stubs can show


class ShapesError(KitchenError):
    """A setting the drill cannot run with, or another run on the drill models. ``code``: "pad_short",
    "bad_settings", "busy"."""

    source = "shapes"
    default_code = "bad_settings"


# One run at a time on the drill models of one server: Triton's counts are per model, so two learners' runs at
# once would each count the other's requests.
_runs: dict[str, threading.Lock] = {}
_runs_guard = threading.Lock()


@contextmanager
def _one_run(endpoint: Endpoint, wait_s: float = 2.0) -> Iterator[None]:
    with _runs_guard:
        lock = _runs.setdefault(endpoint.grpc_url, threading.Lock())
    if not lock.acquire(timeout=wait_s):
        raise ShapesError("busy", "another run is using the shapes drill models on this server")
    try:
        yield
    finally:
        lock.release()


def check(clients_n: int, pad_to: int) -> None:
    if not 1 <= clients_n <= MAX_CLIENTS:
        raise ShapesError("bad_settings", f"clients must be 1..{MAX_CLIENTS}, not {clients_n}")
    if pad_to < LONGEST:
        raise ShapesError("pad_short", f"pad to {pad_to} < the longest row {LONGEST}: a row cannot be cut")
    if pad_to > MAX_PAD:
        raise ShapesError("bad_settings", f"pad to at most {MAX_PAD}, not {pad_to}")


def bucket_of(length: int) -> tuple[int, str]:
    """The bucket a row of ``length`` goes to: its width and its model."""
    for width, model in BUCKETS:
        if length <= width:
            return width, model
    raise ShapesError("bad_settings", f"no bucket holds a row of {length} (longest {LONGEST})")


def route(way: str, length: int, pad_to: int = LONGEST) -> tuple[str, int]:
    """Where a row of ``length`` goes under ``way``, and how wide it is sent: (model, width)."""
    if way == "unequal":
        return SHAPES_DRILL, length
    if way == "padded":
        return SHAPES_DRILL, pad_to
    if way == "ragged":
        return SHAPES_RAGGED, length
    width, model = bucket_of(length)
    return (SHAPES_DRILL if way == "buckets_one_model" else model), width


def models_of(way: str) -> tuple[str, ...]:
    if way == "buckets":
        return tuple(m for _, m in BUCKETS)
    return (SHAPES_RAGGED,) if way == "ragged" else (SHAPES_DRILL,)


def row(length: int, width: int, seed: int) -> np.ndarray:
    """One request's input ``[1, width]``: ``length`` numbers, then zeros (the model's padding changes no score)."""
    x = np.zeros((1, width), np.float32)
    x[0, :length] = np.random.default_rng(seed).uniform(-1, 1, length).astype(np.float32)
    return x


def _infer(client, model: str, x: np.ndarray):
    tensor = grpcclient.InferInput(INPUT, list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    result = client.infer(
        model, [tensor], outputs=[grpcclient.InferRequestedOutput(o) for o in OUTPUTS], client_timeout=30
    )
    return result.as_numpy("score")[0, 0], result.as_numpy("call")[0]


# -- batch counts from the statistics API --------------------------------------------------------------------------
def _counts(endpoint: Endpoint, models: tuple[str, ...]) -> tuple[int, int, Counter]:
    """Executions, inferences and executions per batch size so far, summed over ``models``."""
    executions = inferences = 0
    hist: Counter = Counter()
    for model in models:
        for entry in kserve.statistics(endpoint, model).get("model_stats", []):
            executions += int(entry.get("execution_count", 0))
            inferences += int(entry.get("inference_count", 0))
            for b in entry.get("batch_stats", []) or []:
                hist[int(b["batch_size"])] += int(b.get("compute_infer", {}).get("count", 0))
    return executions, inferences, hist


@dataclass
class ShapeRun:
    """One way of sending, measured: requests answered over ``seconds``, and Triton's counts over the run."""

    way: str
    clients: int
    pad_to: int
    seconds: float
    requests: int
    errors: list[str]
    executions: int
    inferences: int
    histogram: dict[int, int]  # batch size -> executions

    @property
    def throughput_rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def mean_batch(self) -> float | None:
        return self.inferences / self.executions if self.executions else None


def run_way(
    endpoint: Endpoint, way: str, clients_n: int, pad_to: int = LONGEST, seconds: float = RUN_S, seed: int = 0
) -> ShapeRun:
    """``clients_n`` closed-loop clients for ``seconds``; client ``c`` sends rows of random lengths 1..LONGEST
    drawn from its own seed (the same sequence for every way), each routed by ``way``."""
    check(clients_n, pad_to)
    if way not in WAYS:
        raise ShapesError("bad_settings", f"way must be one of {', '.join(WAYS)}")
    client = clients.grpc_client(endpoint)
    models = models_of(way)
    for model in models:  # loaded on first use, not at the server's start
        ensure_loaded(endpoint, model)
    _infer(
        client, route(way, 1, pad_to)[0], row(1, route(way, 1, pad_to)[1], 0)
    )  # wake a stub before counting
    before = _counts(endpoint, models)
    done, errors, lock = [0], [], threading.Lock()
    stop_at = time.perf_counter() + seconds

    def loop(c: int) -> None:
        rng = random.Random(seed * 1000 + c)
        while time.perf_counter() < stop_at:
            length = rng.randint(1, LONGEST)
            model, width = route(way, length, pad_to)
            try:
                _infer(client, model, row(length, width, rng.randrange(1 << 30)))
                with lock:
                    done[0] += 1
            except Exception as exc:  # noqa: BLE001 - Triton's text is what the page shows
                with lock:
                    errors.append(str(exc))
                return

    t0 = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in range(clients_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(seconds + 35)
    elapsed = time.perf_counter() - t0
    time.sleep(SETTLE_S)
    after = _counts(endpoint, models)
    hist = {k: after[2][k] - before[2].get(k, 0) for k in sorted(after[2])}
    return ShapeRun(
        way,
        clients_n,
        pad_to,
        elapsed,
        done[0],
        errors,
        after[0] - before[0],
        after[1] - before[1],
        {k: v for k, v in hist.items() if v > 0},
    )


@dataclass
class ShapesResult:
    runs: list[ShapeRun] = field(default_factory=list)

    def run(self, way: str) -> ShapeRun | None:
        return next((r for r in self.runs if r.way == way), None)

    def outcome(self) -> str:
        """What the unequal rows' batches were, by Triton's own mean batch size: "one" (below 1.5),
        "few" (below half the clients) or "all"."""
        r = self.run("unequal")
        mean = (r.mean_batch if r else None) or 0.0
        if mean < 1.5:
            return "one"
        return "few" if mean < r.clients / 2 else "all"


def load_at_once(endpoint: Endpoint, models: set[str]) -> None:
    """Load the models not loaded yet (they load on first use) side by side rather than one after another: after
    a server's start the shapes drill's four took 11-13 s one by one and 6-10 s at once (load average ~25)."""
    with ThreadPoolExecutor(max_workers=max(len(models), 1)) as pool:
        list(
            pool.map(lambda m: ensure_loaded(endpoint, m), sorted(models))
        )  # list(): a failed load raises here


def compare_shapes(
    endpoint: Endpoint,
    clients_n: int = 8,
    pad_to: int = LONGEST,
    ways: tuple[str, ...] = WAYS,
    seconds: float = RUN_S,
    stop: threading.Event | None = None,
) -> ShapesResult:
    """Each of ``ways`` on the same load, one after another."""
    check(clients_n, pad_to)
    out = ShapesResult()
    with _one_run(endpoint):
        load_at_once(endpoint, {m for way in ways for m in models_of(way)})
        for way in ways:
            if stop is not None and stop.is_set():
                break
            out.runs.append(run_way(endpoint, way, clients_n, pad_to, seconds))
    return out


# -- the Python backend from the inside ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """One request of a burst and the call that served it (the model's own report)."""

    index: int
    pid: int
    call: int  # the call's number in its stub
    requests_in_call: int  # len(requests) of that execute
    width: int


@dataclass
class InsideResult:
    answers: list[Answer]
    errors: list[str]
    instances: int  # the model's instance count, from its config

    def calls(self) -> list[tuple[int, int, int, list[int]]]:
        """Each execute call seen: (pid, call number, len(requests), the burst's request indices), by pid, call."""
        groups: dict[tuple[int, int], list[Answer]] = {}
        for a in self.answers:
            groups.setdefault((a.pid, a.call), []).append(a)
        return [
            (pid, call, g[0].requests_in_call, sorted(a.index for a in g))
            for (pid, call), g in sorted(groups.items())
        ]

    def pids(self) -> list[int]:
        return sorted({a.pid for a in self.answers})

    def outcome(self) -> str:
        """What ``execute`` received, read from the model's own reports: "list" (some call held more than
        one request), "one_each" (every call held one)."""
        return "list" if any(a.requests_in_call > 1 for a in self.answers) else "one_each"


def inside_burst(endpoint: Endpoint, n: int = INSIDE_BURST, length: int = 16) -> InsideResult:
    """``n`` requests of one length sent at once (asynchronous, the app's gRPC client) to ``shapes_drill``."""
    if not 1 <= n <= 32:
        raise ShapesError("bad_settings", f"a burst is 1..32 requests, not {n}")
    if not 1 <= length <= LONGEST:
        raise ShapesError("bad_settings", f"a row is 1..{LONGEST} numbers, not {length}")
    ensure_loaded(endpoint, SHAPES_DRILL)  # loaded on first use, not at the server's start
    client = clients.grpc_client(endpoint)
    cfg = kserve.model_config(endpoint, SHAPES_DRILL)
    instances = sum(int(g.get("count", 1) or 1) for g in cfg.get("instance_group", []) or [{}])
    answers: list[Answer] = []
    errors: list[str] = []
    lock, left = threading.Lock(), threading.Semaphore(0)

    def callback_for(i: int):
        def callback(result, error) -> None:
            with lock:
                if error is not None:
                    errors.append(str(error))
                else:
                    pid, call, k, width = (int(v) for v in result.as_numpy("call")[0])
                    answers.append(Answer(i, pid, call, k, width))
            left.release()

        return callback

    x = row(length, length, 1)
    with _one_run(endpoint):
        _send_burst(client, x, n, callback_for)
        deadline = time.monotonic() + 35
        for _ in range(n):
            if not left.acquire(timeout=max(0.0, deadline - time.monotonic())):
                errors.append("no answer within 35 s")
                break
    return InsideResult(sorted(answers, key=lambda a: a.index), errors, instances)


def _send_burst(client, x: np.ndarray, n: int, callback_for) -> None:
    for i in range(n):
        tensor = grpcclient.InferInput(INPUT, list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        client.async_infer(
            SHAPES_DRILL,
            [tensor],
            callback_for(i),
            outputs=[grpcclient.InferRequestedOutput(o) for o in OUTPUTS],
            client_timeout=30,
        )


@dataclass(frozen=True)
class Stub:
    """One running Python stub: its pid, Triton's instance name, its shared-memory region and that region's size."""

    pid: int
    instance: str
    region: str
    region_bytes: int | None


def _parent(proc: Path, pid: int) -> int | None:
    try:  # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after its ")"
        return int((proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _under(proc: Path, pid: int, ancestor: int, depth: int = 4) -> bool:
    for _ in range(depth):
        if pid == ancestor:
            return True
        parent = _parent(proc, pid)
        if parent is None or parent <= 1:
            return False
        pid = parent
    return pid == ancestor


def stubs(
    model: str = SHAPES_DRILL, server_pid: int | None = None, proc: str = "/proc", shm: str = "/dev/shm"
) -> list[Stub]:
    """The Python stub processes serving ``model`` on this machine (read from ``proc``): the embedded server's.
    Its command line names the model file, the shared-memory region, the pid of the tritonserver that started it,
    and the instance (``<model>_<group>_<i>``). ``server_pid``: only the stubs of that server (or of the
    tritonserver it started); other servers on the same machine have stubs of the same model."""
    out = []
    root = Path(proc)
    for d in root.iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in args if a]
        if len(args) < 9 or not args[0].endswith(STUB) or Path(args[1]).parent.parent.name != model:
            continue
        if server_pid is not None and not (args[5].isdigit() and _under(root, int(args[5]), server_pid)):
            continue
        region = args[2]
        try:
            size = os.stat(os.path.join(shm, region)).st_size
        except OSError:
            size = None
        out.append(Stub(int(d.name), args[8], region, size))
    return sorted(out, key=lambda s: s.instance)
