"""Tensor peek: the real tensors each step of an ensemble received and produced, for one request.

Two honest ways, and the result says which was used (``Peek.source``):

- ``trace``: Triton's own ``level=TENSORS`` trace (where its trace API is open to us and its trace file readable:
  the embedded server). For each step Triton writes the tensors it queued as inputs (``TENSOR_QUEUE_INPUT``) and
  those the backend produced (``TENSOR_BACKEND_OUTPUT``). Numbers come as decimal text with six significant
  digits (Triton's formatting: 0.335938, not 0.3359375). BYTES elements are written as raw bytes between
  ``\\"`` quotes, unescaped, so a trace holding an encoded photo is no valid JSON: the records are read with a
  pattern over the file's bytes, never with a JSON parser.
- ``steps`` (any server, e.g. a remote one whose trace API is closed): each step model called in the DAG's order
  with the tensors the previous steps returned in this run, what a client can reproduce. Full precision, but
  these are separate requests, not the ensemble's own.

Nothing is recomputed in the app: the photo is what the server received, the image is the server's tensor mapped
back to pixels (``x * 128 + 127``, the inverse of ``imaging``'s normalization), the logits and top 5 are the
server's.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.imaging import MEAN, SCALE

WAIT_S = 5.0  # longest wait for the request's trace file
_TENSOR = re.compile(
    rb'\{"id":(\d+),"activity":"(TENSOR_QUEUE_INPUT|TENSOR_BACKEND_OUTPUT)","tensor":\{"name":"([^"]*)",'
    rb'"data":"(.*?)","shape":"([^"]*)","dtype":"(\w+)"\}\}',
    re.S,
)
_MODEL = re.compile(rb'\{"id":(\d+),"model_name":"([^"]*)","model_version":(-?\d+)(?:,"parent_id":(\d+))?\}')
_STAMP = re.compile(rb'\{"id":(\d+),"timestamps":\[\{"name":"REQUEST_START","ns":(\d+)\}\]\}')
_ELEMENT = re.compile(rb'\\"(.*?)\\"(?:,|$)', re.S)


class PeekError(KitchenError):
    """The peek could not be made: ``not_supported`` (no trace and a step the client cannot call alone),
    ``not_found`` (the request's trace did not appear), ``failed`` (the request or a step failed)."""

    source = "peek"
    default_code = "failed"


@dataclass
class PeekTensor:
    """One tensor at one step: what Triton queued for it (``input``) or what it produced (``output``)."""

    step: str  # the step model (the ensemble itself for its inputs and outputs)
    direction: str  # "input" or "output"
    name: str
    datatype: str
    shape: list[int]
    value: np.ndarray  # numbers, or an object array of bytes for BYTES


@dataclass
class Peek:
    model: str
    source: str  # "trace" or "steps"
    steps: list[str]  # step models in the order they ran
    tensors: list[PeekTensor] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def at(self, step: str, direction: str) -> list[PeekTensor]:
        return [t for t in self.tensors if t.step == step and t.direction == direction]

    def photo(self) -> bytes | None:
        """The encoded photo as the ensemble received it (its BYTES input's one element)."""
        for t in self.at(self.model, "input"):
            if t.datatype == "BYTES" and t.value.size == 1:
                return bytes(t.value.reshape(-1)[0])
        return None

    def image_tensor(self) -> PeekTensor | None:
        """The first step output shaped [.., 3, H, W] in FP32: the normalized image."""
        for step in self.steps:
            for t in self.at(step, "output"):
                if t.datatype == "FP32" and len(t.shape) >= 3 and t.shape[-3] == 3:
                    return t
        return None

    def logits(self) -> PeekTensor | None:
        """The first step output of 1000 FP32 values (the classifier's)."""
        for step in self.steps:
            for t in self.at(step, "output"):
                if t.datatype == "FP32" and t.shape and t.shape[-1] == 1000:
                    return t
        return None

    def top5(self) -> list[tuple[str, float]]:
        """The ensemble's top-5 labels and scores as the server returned them."""
        outs = {t.name: t for t in self.at(self.model, "output")}
        labels, scores = outs.get("top5_labels"), outs.get("top5_scores")
        if labels is None or scores is None:
            return []
        words = [
            v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in labels.value.ravel()
        ]
        return list(zip(words, (float(s) for s in scores.value.ravel()), strict=False))


def kind(t: PeekTensor) -> str:
    """How a tensor is best shown: ``photo`` (encoded image bytes), ``image`` (FP32 [.., 3, H, W]), ``logits``
    (1000 FP32), ``probabilities`` (1000 FP32 that are >= 0 and sum to 1), ``labels`` (other BYTES), ``numbers``."""
    if t.datatype == "BYTES":
        if t.value.size == 1 and bytes(t.value.reshape(-1)[0])[:3] in (b"\xff\xd8\xff", b"\x89PN", b"GIF"):
            return "photo"
        return "labels"
    if t.datatype == "FP32" and len(t.shape) >= 3 and t.shape[-3] == 3:
        return "image"
    if t.datatype == "FP32" and t.shape and t.shape[-1] == 1000:
        v = np.asarray(t.value, dtype=np.float64)
        sums = v.reshape(-1, 1000).sum(axis=1)
        if v.min() >= 0 and np.allclose(sums, 1.0, atol=1e-3):
            return "probabilities"
        return "logits"
    return "numbers"


def same_as(p: Peek, t: PeekTensor) -> PeekTensor | None:
    """Another step's output (else the ensemble's input) holding exactly ``t``'s values: where an input came
    from. Compared as the server wrote them (the trace's six digits on both sides)."""
    candidates = [o for o in p.tensors if o.direction == "output" and o.step not in (t.step, p.model)]
    candidates += [o for o in p.tensors if o.step == p.model and o.direction == "input"]
    for other in candidates:
        if other is not t and other.shape == t.shape and other.datatype == t.datatype:
            if np.array_equal(other.value, t.value):
                return other
    return None


def to_pixels(tensor: np.ndarray) -> np.ndarray:
    """A normalized [3, H, W] (or [1, 3, H, W]) tensor -> uint8 [H, W, 3] pixels (``x * 128 + 127``)."""
    chw = np.asarray(tensor, dtype=np.float32).reshape(tensor.shape[-3:])
    return np.clip(np.rint(chw * SCALE + MEAN), 0, 255).astype(np.uint8).transpose(1, 2, 0)


# -- the trace ------------------------------------------------------------------------------------------
def _value(data: bytes, datatype: str, shape: list[int]) -> np.ndarray:
    if datatype == "BYTES":
        items = [m.group(1) for m in _ELEMENT.finditer(data)]
        return (
            np.array(items, dtype=object).reshape(shape)
            if len(items) == int(np.prod(shape))
            else np.array(items, dtype=object)
        )
    from tritonclient.utils import triton_to_np_dtype

    dtype = np.float32 if datatype == "BF16" else triton_to_np_dtype(datatype)
    text = data.decode("ascii").split(",") if data else []
    return np.array(text, dtype=np.float64).astype(dtype).reshape(shape)


def parse_tensor_trace(raw: bytes, model: str) -> Peek | None:
    """A ``level=TENSORS`` trace file's bytes -> the peek of its (last) request to ``model``; None if absent."""
    models = {int(m.group(1)): (m.group(2).decode(), m.group(4)) for m in _MODEL.finditer(raw)}
    roots = [tid for tid, (name, parent) in models.items() if name == model and parent is None]
    if not roots:
        return None
    root = max(roots)
    ids = {root} | {tid for tid, (_, parent) in models.items() if parent is not None and int(parent) == root}
    start = {int(m.group(1)): int(m.group(2)) for m in _STAMP.finditer(raw)}
    children = sorted((i for i in ids if i != root), key=lambda i: start.get(i, 0))
    peek = Peek(model, "trace", [models[i][0] for i in children])
    for m in _TENSOR.finditer(raw):
        tid = int(m.group(1))
        if tid not in ids:
            continue
        shape = [int(d) for d in m.group(5).decode().split(",") if d]
        datatype = m.group(6).decode()
        peek.tensors.append(
            PeekTensor(
                step=models[tid][0],
                direction="input" if m.group(2) == b"TENSOR_QUEUE_INPUT" else "output",
                name=m.group(3).decode(),
                datatype=datatype,
                shape=shape,
                value=_value(m.group(4), datatype, shape),
            )
        )
    peek.tensors.sort(key=lambda t: _rank(peek, t))
    return peek


def _rank(p: Peek, t: PeekTensor) -> tuple[int, int]:
    """The order a reader follows: the ensemble's inputs, each step's inputs then outputs, the ensemble's outputs."""
    if t.step == p.model:
        return (-1 if t.direction == "input" else len(p.steps), 0)
    return (p.steps.index(t.step) if t.step in p.steps else len(p.steps), 0 if t.direction == "input" else 1)


def peek_trace(endpoint: Endpoint, model: str, send, timeout_s: float = WAIT_S) -> Peek:
    """Switch ``level=TENSORS`` tracing on for ``model``, ``send()`` one request, read its tensors (raises
    kserve.KServeError when the trace API is closed, PeekError when the file is out of reach or silent)."""
    from triton_kitchen.tools.trace.capture import capture_lock, file_signatures
    from triton_kitchen.tools.trace.parse import trace_files

    with capture_lock:
        settings = kserve.trace_settings(endpoint, model)
        base = Path(str(settings.get("trace_file") or ""))
        if not str(base) or not base.parent.is_dir():
            raise PeekError("not_found", f"trace file {base} is not readable from here")
        known = file_signatures(base)
        on = {
            "trace_level": ["TIMESTAMPS", "TENSORS"],
            "trace_rate": "1",
            "log_frequency": "1",
            "trace_count": "-1",
        }
        kserve.update_trace_settings(endpoint, on, model)
        try:
            send()
        finally:
            kserve.update_trace_settings(endpoint, {"trace_level": ["OFF"]}, model)
        deadline = time.monotonic() + timeout_s
        while True:
            for f in trace_files(base):
                try:
                    st = f.stat()
                    if known.get(f.name) == (st.st_mtime_ns, st.st_size):
                        continue
                    raw = f.read_bytes()
                except OSError:
                    continue
                if raw.rstrip().endswith(b"]"):
                    found = parse_tensor_trace(raw, model)
                    if found is not None:
                        return found
            if time.monotonic() > deadline:
                raise PeekError(
                    "not_found", f"no TENSORS trace of {model} appeared in {base}.* within {timeout_s:.0f} s"
                )
            time.sleep(0.05)


# -- calling each step ----------------------------------------------------------------------------------
def peek_steps(endpoint: Endpoint, model: str, arrays: dict[str, np.ndarray], protocol: str = "grpc") -> Peek:
    """Each step model called in turn with the tensors earlier steps returned in this run (any server)."""
    from triton_kitchen.tools.inside import PROTOCOLS, server_dag
    from triton_kitchen.tools.protocols import Caller, ProtocolError

    protocol = PROTOCOLS.get(protocol, protocol)
    dag = server_dag(endpoint, model)
    if dag is None:
        raise PeekError("not_supported", f"{model} is no ensemble")
    order = sorted((s for s in dag.steps if s.stage), key=lambda s: s.stage)
    if any(s.is_ensemble or s.decoupled for s in order):
        raise PeekError("not_supported", f"{model} has a nested ensemble or a decoupled step")
    known = dict(arrays)
    peek = Peek(model, "steps", [s.model for s in order])
    for name, value in arrays.items():
        peek.tensors.append(_tensor(model, "input", name, value))
    for s in order:
        inputs = {k: known[v] for k, v in s.input_map.items()}
        caller = Caller(endpoint, protocol, s.model, inputs, output_names=list(s.output_map))
        try:
            result = caller.call()
        except ProtocolError as exc:
            raise PeekError("failed", f"{s.model}: {exc}") from exc
        finally:
            caller.close()
        for k, v in inputs.items():
            peek.tensors.append(_tensor(s.model, "input", k, v))
        for k, v in result.outputs.items():
            peek.tensors.append(_tensor(s.model, "output", k, v))
            known[s.output_map[k]] = v
    for out in dag.outputs:
        if out in known:
            peek.tensors.append(_tensor(model, "output", out, known[out]))
    return peek


def _tensor(step: str, direction: str, name: str, value: np.ndarray) -> PeekTensor:
    value = np.asarray(value)
    datatype = "BYTES" if value.dtype.kind in "OSU" else _np_to_triton(value.dtype)
    return PeekTensor(step, direction, name, datatype, list(value.shape), value)


def _np_to_triton(dtype) -> str:
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(dtype)


def peek(
    endpoint: Endpoint,
    model: str,
    arrays: dict[str, np.ndarray],
    protocol: str = "grpc",
    use_trace: bool = True,
) -> Peek:
    """One request's tensors at each step: from Triton's TENSORS trace where open to us, else by calling each
    step (the result's ``source`` and ``notes`` say which, and why)."""
    from triton_kitchen.tools.inside import PROTOCOLS
    from triton_kitchen.tools.protocols import Caller, ProtocolError

    protocol = PROTOCOLS.get(protocol, protocol)  # "http" -> the binary tensor extension, as trace does
    if use_trace:
        caller = Caller(endpoint, protocol, model, arrays)
        try:
            failed: list[ProtocolError] = []

            def send():
                try:
                    caller.call()
                except ProtocolError as exc:
                    failed.append(exc)

            found = peek_trace(endpoint, model, send)
            if failed:
                found.notes.append(f"the request failed: {failed[0]}")
            return found
        except (kserve.KServeError, PeekError) as exc:
            note = f"no TENSORS trace ({exc.detail or exc}): each step called in turn instead"
        finally:
            caller.close()
    else:
        note = "each step called in turn"
    result = peek_steps(endpoint, model, arrays, protocol)
    result.notes.append(note)
    return result


def logits_histogram(logits: np.ndarray, title: str, x_title: str, y_title: str):
    """A plotly histogram of the 1000 logits the server returned (the words are the caller's)."""
    import plotly.graph_objects as go

    values = np.asarray(logits, dtype=np.float64).ravel()
    fig = go.Figure(go.Histogram(x=values, nbinsx=60, marker_color="#4c78a8"))
    fig.update_layout(
        title=title,
        xaxis_title=x_title,
        yaxis_title=y_title,
        height=300,
        margin={"t": 40, "b": 40, "l": 50, "r": 10},
    )
    return fig
