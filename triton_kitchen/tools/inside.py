"""One request seen from inside an ensemble: which steps ran, which were pruned, which failed, and how long each
step queued and computed (``python -m triton_kitchen trace``; ``cli_trace`` is its command line).

Triton tells a client *that* an ensemble failed, not *which step* failed (server #4786): its message is the step's
own text behind ``in ensemble 'E', ``. Three kinds of evidence decide the failing step, and the report says which
were used:

- ``statistics`` (any server): each step model's statistics before and after the request. "Ran" is the rise of
  its inference count (not of its execution count alone: two requests of one step model, tta_ensemble's two
  classifier branches, can share one batched execution). Beware Triton 2.51: a Python model that *answers* with
  an error response counts it as a **success** in its own statistics (only the ensemble's failure count rises,
  by two per failed request), so a rise means "executed", never "succeeded". A step model whose own failure count
  rose failed for certain.
- ``trace`` (where Triton's trace API is open to us and its trace file readable: the embedded server; the ``serve``
  command's server refuses its trace API to other clients): per request, which steps were scheduled
  (``REQUEST_START``) and which executed (``COMPUTE_START``), and each one's queue and compute time.
- ``error_text``: a step model's name in Triton's message (after the ``in ensemble`` prefix), a hint that narrows
  several candidates or confirms one.

Without a direct sign (a failure count, a step scheduled but never executed), the failing step is the one that
executed while a step needing its outputs never did; when every needed step executed, the failing step is the one
that produces the requested outputs. Steps whose outputs were not asked for (``--outputs``) are **pruned** by
Triton 2.51 (their counts do not rise); a step the DAG says is not needed but which ran anyway is reported as
having run, with a note.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import triton_to_np_dtype

from triton_kitchen.core import kserve
from triton_kitchen.core.config import ModelEntry
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.ensemble import Dag, build_dag
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools import server_stats

PROTOCOLS = {"http": "http-binary", "grpc": "grpc"}  # trace's --protocol -> the Caller's protocol
EVIDENCE = ("trace", "statistics", "error_text")
STATS_WAIT_S = 2.0  # longest wait for the request to show in the statistics
TRACE_WAIT_S = 3.0  # longest wait for the request's trace file


class InsideError(KitchenError):
    """The request could not be made at all: ``unknown_model``, ``bad_input`` (a file that does not fit the
    model's input, an unknown output name), ``no_server`` (nothing answers), ``not_supported`` (a decoupled
    model)."""

    source = "inside"
    default_code = "bad_input"


@dataclass
class StepReport:
    """One step of the ensemble (the model itself for a model that is no ensemble) in one request."""

    id: str  # the DAG's step id (model name, ``#2`` for a model's second use)
    model: str
    version: int | None  # the version that ran; the config's when it did not run (None: the latest)
    ran: bool
    queue_ms: float | None
    compute_ms: float | None  # compute input + infer + output
    needed: bool = True  # the requested outputs depend on it (else Triton may prune it)
    scheduled: bool | None = None  # trace: Triton handed it a request (REQUEST_START); None without a trace

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "version": self.version,
            "ran": self.ran,
            "queue_ms": _round(self.queue_ms),
            "compute_ms": _round(self.compute_ms),
        }


@dataclass
class InsideReport:
    """``python -m triton_kitchen trace --json``: ``ok, error, failed_step, steps, pruned, outputs`` and the
    ``evidence`` (which evidence decided ``failed_step``, where "ran" and the times came from, notes)."""

    model: str
    protocol: str
    ok: bool
    error: str | None
    failed_step: str | None  # the failing step's model
    steps: list[StepReport]
    pruned: list[str]
    outputs: dict[str, list[int]]
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": self.error,
            "failed_step": self.failed_step,
            "steps": [s.to_json() for s in self.steps],
            "pruned": list(self.pruned),
            "outputs": dict(self.outputs),
            "model": self.model,
            "protocol": self.protocol,
            "evidence": self.evidence,
        }


def failure_json(message: str, model: str = "", protocol: str = "") -> dict[str, Any]:
    """The JSON document of a request that could not be made (bad input, no server): the same keys."""
    return InsideReport(model, protocol, False, message, None, [], [], {}, {"failed_step": []}).to_json()


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


# -- the ensemble as the server loaded it ------------------------------------------------------------
def server_repo(endpoint: Endpoint | str, model: str) -> dict[str, ModelEntry]:
    """The loaded configs of ``model`` and (for an ensemble) its step models, nested ones too, as repository
    entries: the DAG of what the server runs, on a remote server as well (raises kserve.KServeError)."""
    repo: dict[str, ModelEntry] = {}
    todo = [model]
    while todo:
        name = todo.pop()
        if name in repo:
            continue
        try:
            raw = kserve.model_config(endpoint, name)
        except kserve.KServeError:
            if name == model:
                raise
            continue  # a step model the server does not have: the DAG shows the step without its types
        cfg = json_format.ParseDict(raw, model_config_pb2.ModelConfig(), ignore_unknown_fields=True)
        repo[name] = ModelEntry(name, Path(name), Path(name) / "config.pbtxt", cfg, text="")
        todo += [s.model_name for s in cfg.ensemble_scheduling.step]
    return repo


def server_dag(endpoint: Endpoint | str, model: str) -> Dag | None:
    """The DAG of ``model`` as loaded (nested ensembles expanded), or None when it is no ensemble."""
    repo = server_repo(endpoint, model)
    if not repo[model].is_ensemble:
        return None
    return build_dag(model, repo, expand=True, validate=False)


def predecessors(dag: Dag) -> dict[str, list[str]]:
    """Step id -> the steps whose outputs it reads."""
    out: dict[str, list[str]] = {s.id: [] for s in dag.steps}
    for t in dag.tensors:
        for c in t.consumers:
            if t.producer is not None and c in out and t.producer not in out[c]:
                out[c].append(t.producer)
    return out


def needed_steps(dag: Dag, outputs: list[str] | None) -> set[str]:
    """The steps the requested ``outputs`` (all the ensemble's when None) depend on."""
    producer = {t.name: t.producer for t in dag.tensors}
    by_id = {s.id: s for s in dag.steps}
    todo = [producer.get(o) for o in (outputs or dag.outputs)]
    needed: set[str] = set()
    while todo:
        sid = todo.pop()
        if sid is None or sid in needed or sid not in by_id:
            continue
        needed.add(sid)
        todo += [producer.get(t) for t in by_id[sid].input_map.values()]
    return needed


# -- the input files -----------------------------------------------------------------------------------
def read_inputs(specs: list[str], info) -> dict[str, np.ndarray]:
    """``--input`` values -> the request's arrays. ``FILE`` (the model has one required input) or ``NAME=FILE``;
    a BYTES input gets the file's bytes as one element, a tensor input a ``.npy`` file (its batch dimension of 1
    may be left out). ``info`` is the model's :class:`~triton_kitchen.tools.protocols.ModelInfo`."""
    by_name = {t.name: t for t in info.inputs}
    required = [t.name for t in info.inputs if not t.optional]
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or name not in by_name:
            if len(required) != 1 or (sep and not Path(spec).exists()):
                raise InsideError(
                    "bad_input",
                    f"{info.name} has inputs {', '.join(by_name)}: give each as --input NAME=FILE"
                    if sep or len(required) != 1
                    else f"{info.name} has no input {name!r}",
                )
            name, path = required[0], spec
        arrays[name] = _fit(Path(path), by_name[name], info.max_batch_size > 0)
    missing = [n for n in required if n not in arrays]
    if missing:
        raise InsideError("bad_input", f"{info.name} needs input {', '.join(missing)} (--input NAME=FILE)")
    return arrays


def _fit(path: Path, tensor, batching: bool) -> np.ndarray:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InsideError("bad_input", f"cannot read {path}: {exc.strerror or exc}") from exc
    want = [int(d) for d in tensor.shape]
    if path.suffix == ".npy":
        try:
            import io

            array = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InsideError("bad_input", f"{path} is not a readable .npy file: {exc}") from exc
    elif tensor.datatype == "BYTES":
        array = np.full([1] * len(want), data, dtype=object)
    else:
        raise InsideError(
            "bad_input",
            f"input {tensor.name} is {tensor.datatype} {want}: give it a .npy file, not {path.name}",
        )
    if tensor.datatype == "BYTES":
        if array.dtype.kind not in "OSU":
            raise InsideError("bad_input", f"{path} holds {array.dtype}, input {tensor.name} takes BYTES")
        array = np.vectorize(lambda v: v if isinstance(v, bytes) else str(v).encode(), otypes=[object])(array)
    else:
        dtype = np.dtype(np.float32 if tensor.datatype == "BF16" else triton_to_np_dtype(tensor.datatype))
        if array.dtype != dtype:
            raise InsideError(
                "bad_input",
                f"{path} holds {array.dtype}, input {tensor.name} takes {tensor.datatype} ({dtype.name})",
            )
    held = shape = list(array.shape)
    if batching and len(shape) == len(want) - 1:
        array, shape = array.reshape([1, *shape]), [1, *shape]
    if len(shape) != len(want) or any(w not in (-1, s) for w, s in zip(want, shape, strict=True)):
        raise InsideError(
            "bad_input", f"{path} holds shape {held}, input {tensor.name} takes {want} (-1: any size)"
        )
    return array


# -- deciding the failing step (pure) ------------------------------------------------------------------
_PREFIX = re.compile(r"^\s*(HTTP \d+: )?in ensemble '[^']*',\s*")


def named_in(text: str | None, model: str) -> bool:
    """``model`` appears as a whole name in Triton's error text (after its ``in ensemble 'E',`` prefix)."""
    if not text:
        return False
    body = _PREFIX.sub("", text)
    return re.search(rf"(?<![\w.-]){re.escape(model)}(?![\w-])", body) is not None


def decide_failed_step(
    steps: list[StepReport],
    preds: dict[str, list[str]],
    error: str | None,
    failed_models: set[str] = frozenset(),
    traced: bool = False,
) -> tuple[str | None, list[str], list[str], list[str]]:
    """The failing step's id, the evidence that decided it, the candidates, and notes.

    ``steps`` carry ``ran``, ``needed`` and (with a trace) ``scheduled``; ``failed_models``: step models whose own
    failure count rose."""
    needed = [s for s in steps if s.needed]
    ran = {s.id for s in steps if s.ran}
    base = ["trace", "statistics"] if traced else ["statistics"]
    notes: list[str] = []
    direct = [s.id for s in needed if s.scheduled and not s.ran]
    if direct:
        return _narrow(direct, steps, error, ["trace"], notes, "scheduled by Triton but never executed")
    direct = [s.id for s in needed if s.model in failed_models]
    if direct:
        return _narrow(direct, steps, error, ["statistics"], notes, "its own failure count rose")
    if not ran & {s.id for s in needed}:
        notes.append("no step executed: Triton refused the request before its first step")
        return None, base, [], notes
    consumers: dict[str, list[str]] = {s.id: [] for s in steps}
    for sid, ps in preds.items():
        for p in ps:
            consumers.setdefault(p, []).append(sid)
    needed_ids = {s.id for s in needed}
    if needed_ids <= ran:
        candidates = [s.id for s in needed if not any(c in needed_ids for c in consumers.get(s.id, []))]
        why = "every needed step executed: the last ones answered with the error"
    else:
        candidates = [
            s.id
            for s in needed
            if s.id in ran and any(c in needed_ids and c not in ran for c in consumers.get(s.id, []))
        ]
        why = "it executed, and a step that needs its outputs never did"
    return _narrow(candidates, steps, error, base, notes, why)


def _narrow(candidates, steps, error, evidence, notes, why):
    model_of = {s.id: s.model for s in steps}
    named = [c for c in candidates if named_in(error, model_of[c])]
    if len(candidates) == 1:
        if named:
            evidence = [*evidence, "error_text"]
        notes.append(f"{model_of[candidates[0]]}: {why}")
        return candidates[0], evidence, list(candidates), notes
    if len(named) == 1:
        notes.append(f"{model_of[named[0]]}: {why}, and the error text names it")
        return named[0], [*evidence, "error_text"], list(candidates), notes
    if candidates:
        notes.append(f"undecided between {', '.join(model_of[c] for c in candidates)} ({why})")
    return None, evidence, list(candidates), notes


# -- one request ---------------------------------------------------------------------------------------
def _counts(snap: dict, model: str) -> tuple[int, int, int]:
    """(requests executed, successes, failures) of ``model`` in a statistics snapshot."""
    m = snap.get(model, {})
    inf = m.get("inference_stats", {})
    executed = max(int(m.get("inference_count", 0)), int(m.get("execution_count", 0)))
    return executed, int(inf.get("success", {}).get("count", 0)), int(inf.get("fail", {}).get("count", 0))


def _settled_after(endpoint: Endpoint, model: str, before: dict) -> dict:
    """Statistics once the request shows in ``model``'s counts, plus the moment Triton takes to count the
    steps (:data:`server_stats.SETTLE_S`)."""
    deadline = time.monotonic() + STATS_WAIT_S
    b = _counts(before, model)
    while True:
        after = server_stats.snapshot(endpoint)
        a = _counts(after, model)
        if a[1] + a[2] > b[1] + b[2] or time.monotonic() > deadline:
            time.sleep(server_stats.SETTLE_S)
            return server_stats.snapshot(endpoint)
        time.sleep(0.02)


def _send(caller):
    """The call's result, or the ProtocolError it raised (so that a failed request's trace is still read)."""
    from triton_kitchen.tools.protocols import ProtocolError

    try:
        return caller.call()
    except ProtocolError as exc:
        return exc


def look_inside(
    endpoint: Endpoint,
    model: str,
    arrays: dict[str, np.ndarray],
    outputs: list[str] | None = None,
    protocol: str = "http",
    timeout_s: float = 30.0,
    use_trace: bool = True,
) -> InsideReport:
    """Send one request to ``model`` and report it from inside (see the module docstring). ``endpoint``'s HTTP
    address serves the statistics and configs; the request goes over ``protocol`` (``http`` or ``grpc``)."""
    from triton_kitchen.tools import trace
    from triton_kitchen.tools.protocols import Caller, ProtocolError

    try:
        dag = server_dag(endpoint, model)
    except kserve.KServeError as exc:
        address = endpoint.http_url if isinstance(endpoint, Endpoint) else endpoint
        if exc.code in ("connection", "timeout"):
            raise InsideError("no_server", f"no Triton server answers at {address} ({exc.detail})") from exc
        triton = exc.detail.split(": ", 2)[-1] if exc.detail else str(exc)
        raise InsideError("unknown_model", f"{address} has no model {model!r} loaded: {triton}") from exc
    if dag is not None and outputs:
        unknown = [o for o in outputs if o not in dag.outputs]
        if unknown:
            raise InsideError(
                "bad_input",
                f"{model} has no output {', '.join(unknown)}; its outputs: {', '.join(dag.outputs)}",
            )
    preds = predecessors(dag) if dag is not None else {model: []}
    step_list = [(s.id, s.model, s.version) for s in dag.steps] if dag is not None else [(model, model, -1)]
    need = needed_steps(dag, outputs) if dag is not None else {model}
    notes: list[str] = []
    caller = Caller(endpoint, PROTOCOLS[protocol], model, arrays, output_names=outputs, timeout_s=timeout_s)
    timeline = None
    sent: dict[str, Any] = {}

    def send():
        sent["result"] = _send(caller)
        return sent["result"]

    try:
        before = server_stats.snapshot(endpoint)
        if use_trace:
            try:
                _, timeline = trace.capture(endpoint, model, send, timeout_s=TRACE_WAIT_S, local=True)
            except (kserve.KServeError, trace.TraceError) as exc:  # trace API closed, file out of reach
                closed = isinstance(exc, kserve.KServeError) and exc.code == "no_control_api"
                key = " (set TRITON_KITCHEN_KEY to the server's key: `serve` prints it)" if closed else ""
                notes.append(f"no trace: {exc.detail or exc}{key}")
        if "result" not in sent:
            send()
        after = _settled_after(endpoint, model, before)
    except kserve.KServeError as exc:
        raise InsideError("no_server", f"statistics unreachable: {exc.detail or exc}") from exc
    finally:
        caller.close()
    result = sent["result"]
    if isinstance(result, ProtocolError) and result.code in ("connection", "timeout"):
        notes.append(f"the request did not complete: {result.code}")
    ok = not isinstance(result, ProtocolError)
    error = None if ok else str(result)
    _, succeeded, failures = (
        a - b for a, b in zip(_counts(after, model), _counts(before, model), strict=True)
    )
    # one request: one success, or (failed) two failures of an ensemble, one success of a Python model's error answer
    if (succeeded + failures > 1) if ok else (succeeded > 1 or failures > 2):
        notes.append("other requests reached the server meanwhile: the statistics deltas include theirs")
    steps = _steps(step_list, need, before, after)
    traced = timeline is not None
    if traced and dag is not None:
        _apply_trace(steps, dag, timeline)
    elif traced:
        _apply_root_trace(steps[0], timeline)
    failed_models = {s.model for s in steps if _counts(after, s.model)[2] > _counts(before, s.model)[2]}
    failed_models.discard(model if dag is not None else "")
    failed, used, candidates, why = (None, [], [], [])
    if not ok:
        failed, used, candidates, why = decide_failed_step(steps, preds, error, failed_models, traced)
    for s in steps:
        if s.ran and not s.needed:
            notes.append(f"{s.model} ran although no requested output needs it")
    by_id = {s.id: s for s in steps}
    return InsideReport(
        model=model,
        protocol=protocol,
        ok=ok,
        error=error,
        failed_step=by_id[failed].model if failed else None,
        steps=steps,
        pruned=[s.model for s in steps if not s.needed and not s.ran],
        outputs={k: list(np.shape(v)) for k, v in (result.outputs.items() if ok else [])},
        evidence={
            "failed_step": used,
            "candidates": [by_id[c].model for c in candidates],
            "ran": "trace" if traced else "statistics",
            "timing": "trace" if traced else "statistics",
            "notes": why + notes,
        },
    )


def _steps(step_list, need, before: dict, after: dict) -> list[StepReport]:
    """Steps from the statistics: a model's executed-request delta goes to its needed steps first."""
    out = []
    left: dict[str, int] = {}
    for _, m, _ in step_list:
        left.setdefault(m, _counts(after, m)[0] - _counts(before, m)[0])
    order = sorted(step_list, key=lambda s: s[0] not in need)  # needed steps first, config order kept
    ran: dict[str, bool] = {}
    for sid, m, _ in order:
        ran[sid] = left[m] > 0
        left[m] -= 1
    for sid, m, version in step_list:
        d = server_stats.model_delta(before, after, m)
        compute = None
        if d.compute_infer_ms is not None:
            compute = (d.compute_input_ms or 0) + d.compute_infer_ms + (d.compute_output_ms or 0)
        versions = after.get(m, {}).get("versions", {})
        rose = [v for v, n in versions.items() if n > before.get(m, {}).get("versions", {}).get(v, 0)]
        out.append(
            StepReport(
                id=sid,
                model=m,
                version=int(rose[0])
                if ran[sid] and len(rose) == 1 and rose[0].isdigit()
                else _version(version),
                ran=ran[sid],
                queue_ms=d.queue_ms if ran[sid] else None,
                compute_ms=compute if ran[sid] else None,
                needed=sid in need,
            )
        )
    return out


def _version(v: int) -> int | None:
    return v if v > 0 else None


def _apply_trace(steps: list[StepReport], dag: Dag, timeline) -> None:
    """Ran, scheduled, version and times from the request's own trace."""
    from triton_kitchen.tools.flow.run import attach  # step assignment for a model used twice

    attach(dag, timeline)
    by_index = timeline.by_step()
    for i, s in enumerate(steps):
        execs = by_index.get(i, [])
        s.scheduled = bool(execs)
        s.ran = any("COMPUTE_START" in e.timestamps for e in execs)
        if execs:
            _times(s, execs[0])
        else:
            s.queue_ms = s.compute_ms = None


def _apply_root_trace(step: StepReport, timeline) -> None:
    step.scheduled = True
    step.ran = "COMPUTE_START" in timeline.root.timestamps
    _times(step, timeline.root)


def _times(step: StepReport, node) -> None:
    ts = node.timestamps
    if node.version > 0:
        step.version = node.version
    if "QUEUE_START" in ts and "COMPUTE_START" in ts:
        step.queue_ms = (ts["COMPUTE_START"] - ts["QUEUE_START"]) / 1e6
    if "COMPUTE_START" in ts and "COMPUTE_END" in ts:
        step.compute_ms = (ts["COMPUTE_END"] - ts["COMPUTE_START"]) / 1e6
