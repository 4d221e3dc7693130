"""The tiny language model served by Triton's Python backend, under two schedulers, one token per response.

Both model folders' ``model.py`` import :class:`TritonPythonModel` from here; the model's config says which
scheduler it runs under:

- **request-level batching** (``dynamic_batching``): one ``execute()`` takes the batch Triton formed, prefills
  every prompt, then decodes one token for every unfinished sequence per iteration until the longest ends. A
  sequence that finished keeps its place idle (no tokens computed for it) until the batch ends; only then can
  Triton start the next batch.
- **in-flight batching** (``sequence_batching { iterative_sequence: true }``): one ``execute()`` is one step.
  Newcomers (``flags() & START``) are prefilled, running sequences decode one token, every sequence's token is
  sent, unfinished requests are released with ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE`` and come back in the
  next step, finished ones get the final flag. Sequences are keyed by ``correlation_id()``: Triton's iterative
  sequencer gives each request without one its own id and the START flag, and a rescheduled request keeps both
  ids and comes back with flags 0 (core r24.10 ``sequence_utils.h``/``.cc``).

At most :data:`MAX_SEQUENCES` sequences generate at once: the configs' ``max_batch_size`` (and, for in-flight,
``oldest { max_candidate_sequences }``); the rest wait in Triton's queue (the dynamic batcher's queue or the
sequence batcher's backlog).

Inputs are those Triton's OpenAI-compatible frontend (server ``python/openai``, from r24.11) sends to a Python
model: ``text_input`` (BYTES), optional ``max_tokens`` (INT32), ``temperature`` (FP32), ``stop_words`` (BYTES, a
list), ``stream`` (BOOL; absent means true here, so ``/generate`` on these models gets Triton's "exactly 1
response" refusal unless the request says ``"stream": false``). Request parameters: ``seed`` (int) seeds
sampling; ``ignore_eos`` (bool, as vLLM's sampling parameter) generates past the end-of-document token, so a
benchmark gets the output lengths it drew.
Outputs: ``text_output`` (the text of this response's tokens; with ``stream`` false one response with all of it)
and ``iteration``, a JSON record of what the server did (:func:`response_record`).

Bad input: an empty prompt is refused with a message; ``max_tokens`` below 0 or above the context is clamped and
the record says so (0 gives one final response with no text); temperature is clamped to [0, 5]; a prompt longer
than the context keeps its newest tokens (``dropped_prompt_tokens`` in every record). A request found cancelled
(the client cancelled or disconnected: Triton cancels the request) ends at the end of that step: its KV cache is
freed and the step's record lists it under ``ended``
(or the next step's record, when no other sequence was there to receive this one's; and the final record of a later
request whose parameter ``ended_of`` names its request id). Under in-flight batching a request cancelled *between* steps
is dropped by Triton's scheduler without telling the model; the model frees a sequence that has been missing from
:data:`GONE_AFTER_STEPS` steps in a row for at least :data:`GONE_AFTER_S` seconds and records it as ``gone``.

Times in the records: ``*_ns`` are ``time.time_ns()`` (the server's wall clock: a remote client can line them up
with its own clock, up to the clocks' offset); ``mono_*_ns`` are ``time.monotonic_ns()``, the clock of Triton's
trace timestamps on Linux (steady_clock), comparable only on the server's machine.

Imported inside Triton's Python stub (Python 3.10): numpy and the standard library only; ``pb_utils`` is imported
in :meth:`TritonPythonModel.initialize`, so the pure helpers here are importable anywhere.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from triton_kitchen.models.tiny_lm import tokenizer
from triton_kitchen.models.tiny_lm.network import KVCache, TinyLM, fit_prompt, sample

MAX_SEQUENCES = 8  # the configs' max_batch_size (and max_candidate_sequences): sequences generating at once
DEFAULT_MAX_TOKENS = 32
MAX_TEMPERATURE = 5.0
CANCEL_CHECK_S = 0.05  # request.is_cancelled() is an IPC round trip (about 0.1-0.2 ms): at most this often
GONE_AFTER_STEPS = 2
GONE_AFTER_S = 0.25
ENDED_LOG = (
    256  # ended entries kept for a later request's parameter "ended_of" (a client that left cannot be told)
)
REQUEST_LEVEL, IN_FLIGHT = "request_level", "in_flight"
START_FLAG = 1  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_START


class BadInput(ValueError):
    """A request the model refuses, with the message the client gets."""


@dataclass
class Ask:
    """What one request asks for, after the model's rules (clamps and notes said in ``notes``)."""

    prompt: str
    max_tokens: int
    temperature: float
    stop_words: list[str]
    stream: bool
    seed: int
    notes: list[str] = field(default_factory=list)
    ignore_eos: bool = False  # EOS is then a token like any other (it has no text): the output has max_tokens


def _first(value):
    if value is None:
        return None
    arr = np.asarray(value).reshape(-1)
    return arr[0] if arr.size else None


def _text(value) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def read_ask(get, context_length: int, parameters: dict | None = None, default_seed: int = 0) -> Ask:
    """The request's inputs as an :class:`Ask`. ``get(name)`` returns the input's numpy array or ``None``;
    raises :class:`BadInput` for an empty or missing prompt."""
    parameters = parameters or {}
    notes: list[str] = []
    raw = _first(get("text_input"))
    prompt = "" if raw is None else _text(raw)
    if not prompt:
        raise BadInput("the prompt is empty: send the text to continue in text_input")
    mt = _first(get("max_tokens"))
    max_tokens = DEFAULT_MAX_TOKENS if mt is None else int(mt)
    limit = context_length - 1
    if max_tokens < 0:
        notes.append(f"max_tokens {max_tokens} is below 0: clamped to 0")
        max_tokens = 0
    elif max_tokens > limit:
        notes.append(f"max_tokens {max_tokens} is more than the context holds: clamped to {limit}")
        max_tokens = limit
    t = _first(get("temperature"))
    temperature = 0.0 if t is None else float(t)
    if not np.isfinite(temperature) or temperature < 0:
        notes.append(f"temperature {temperature} clamped to 0")
        temperature = 0.0
    elif temperature > MAX_TEMPERATURE:
        notes.append(f"temperature {temperature} clamped to {MAX_TEMPERATURE:g}")
        temperature = MAX_TEMPERATURE
    sw = get("stop_words")
    stop_words = [] if sw is None else [w for w in (_text(x) for x in np.asarray(sw).reshape(-1)) if w]
    st = _first(get("stream"))
    stream = True if st is None else bool(st)
    ignore_eos = parameters.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        notes.append(f"ignore_eos {ignore_eos!r} is not a bool: false used")
        ignore_eos = False
    seed = parameters.get("seed", default_seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        notes.append(f"seed {seed!r} is not an int: {default_seed} used")
        seed = default_seed
    return Ask(prompt, max_tokens, temperature, stop_words, stream, seed, notes, ignore_eos)


def held_back(text: str, stop_words: list[str]) -> int:
    """How many characters at the end of ``text`` could be the start of a stop word (not to be sent yet)."""
    keep = 0
    for w in stop_words:
        for n in range(min(len(w) - 1, len(text)), keep, -1):
            if text.endswith(w[:n]):
                keep = n
                break
    return keep


def find_stop(text: str, stop_words: list[str]) -> int:
    """The index where the first stop word in ``text`` starts, or -1."""
    hits = [i for i in (text.find(w) for w in stop_words) if i >= 0]
    return min(hits) if hits else -1


class Sequence:
    """One request's generation: its KV cache, sampled tokens, the text not yet sent."""

    def __init__(self, key, request_id: str, ask: Ask, model: TinyLM, step: int) -> None:
        self.key = key
        self.request_id = request_id
        self.ask = ask
        ids = tokenizer.encode(ask.prompt)
        self.prompt, self.dropped = fit_prompt(ids, model.context_length, ask.max_tokens)
        self.context_length = model.context_length
        self.cache: KVCache = model.new_cache()
        self.rng = np.random.default_rng(ask.seed)
        self.tokens: list[int] = []
        self.decoder = tokenizer.StreamDecoder()
        self.text = ""  # all text decoded so far (stop words cut off)
        self.sent = 0  # characters of self.text already sent
        self.finish: str | None = None
        self.joined_step = step
        self.last_seen_step = step
        self.last_seen_s = time.monotonic()
        self.last_cancel_check = 0.0
        self.missed = 0
        self.request = None  # the Triton request object of the current execution
        self.sender = None

    @property
    def kv_bytes(self) -> int:
        return int(self.cache.nbytes)

    def take(self, logits: np.ndarray, context_length: int) -> list[int]:
        """Sample the next token from ``logits``; update text and finish reason; the token ids emitted."""
        token = sample(logits, self.ask.temperature, self.rng)
        if token == tokenizer.EOS and not self.ask.ignore_eos:
            self.text += self.decoder.flush()
            self.finish = "stop"
            return []
        self.tokens.append(token)
        self.text += self.decoder.push(token)
        cut = find_stop(self.text, self.ask.stop_words)
        if cut >= 0:
            self.text = self.text[:cut]
            self.finish = "stop"
        elif len(self.tokens) >= self.ask.max_tokens or len(self.prompt) + len(self.tokens) >= context_length:
            self.text += self.decoder.flush()
            self.finish = "length"
        return [token]

    def unsent(self) -> str:
        """The text to send now: everything when finished, else all but a possible stop-word start."""
        end = len(self.text) if self.finish else len(self.text) - held_back(self.text, self.ask.stop_words)
        end = max(end, self.sent)
        piece, self.sent = self.text[self.sent : end], end
        return piece

    def free(self) -> int:
        """Free the KV cache; the bytes it held."""
        held = self.kv_bytes
        self.cache.free()
        return held


def step_record(
    scheduler: str,
    step: int,
    execution: int,
    start: tuple[int, int],
    end: tuple[int, int],
    running: list[Sequence],
    idle: list[Sequence],
    emitted: dict,
    phase: dict,
    ended: list[dict],
) -> dict:
    """What one step did: its times, every sequence holding a place in the batch, tokens, KV bytes."""
    return {
        "scheduler": scheduler,
        "step": step,
        "execution": execution,
        "start_ns": start[0],
        "end_ns": end[0],
        "mono_start_ns": start[1],
        "mono_end_ns": end[1],
        "batch": [
            {
                "request_id": s.request_id,
                "sequence": s.key,
                "phase": phase.get(s.key, "idle"),
                "tokens": emitted.get(s.key, []),
                "kv_bytes": s.kv_bytes,
            }
            for s in [*running, *idle]
        ],
        "ended": ended,
    }


def response_record(
    seq: Sequence, record: dict, final: bool, max_sequences: int, weights: str = "trained"
) -> dict:
    """The ``iteration`` output of one response: the step's record plus this request's own figures."""
    out = {
        "request_id": seq.request_id,
        "sequence": seq.key,
        "index": len(seq.tokens),
        "prompt_tokens": len(seq.prompt),
        "dropped_prompt_tokens": seq.dropped,
        "max_tokens": seq.ask.max_tokens,
        "temperature": seq.ask.temperature,
        "notes": seq.ask.notes,
        "max_sequences": max_sequences,
        "context_length": seq.context_length,
        "weights": weights,
        "steps": [record] if record else [],
    }
    if final:
        out["finish_reason"] = seq.finish or "length"
        out["completion_tokens"] = len(seq.tokens)
    return out


def response_json(
    seq: Sequence, step_json: str, final: bool, max_sequences: int, weights: str = "trained"
) -> str:
    """:func:`response_record` as JSON text, the step's record spliced in already serialized (a step's record
    is the same in every response of that step: it is serialized once per step, not once per sequence)."""
    head = json.dumps(response_record(seq, {}, final, max_sequences, weights))
    return head.replace('"steps": []', '"steps": [' + step_json + "]", 1) if step_json else head


def _now() -> tuple[int, int]:
    return time.time_ns(), time.monotonic_ns()


class TritonPythonModel:
    """The Python backend's model class for both schedulers (chosen by the config, see the module doc)."""

    def initialize(self, args):
        import triton_python_backend_utils as pb_utils

        self.pb = pb_utils
        config = json.loads(args["model_config"])
        self.name = config.get("name", args.get("model_name", ""))
        self.scheduler = IN_FLIGHT if "sequence_batching" in config else REQUEST_LEVEL
        self.max_sequences = int(config.get("max_batch_size") or 1)
        try:
            self.model = TinyLM.load()
            self.weights = "trained"
        except (
            OSError,
            ValueError,
            KeyError,
        ) as exc:  # a model must load: say in every record why it is random
            self.model = TinyLM.fresh()
            self.weights = f"random (weights not loaded: {exc})"
        self.context_length = self.model.context_length
        self.sequences: dict = {}  # in-flight: correlation id -> Sequence
        self.step = 0
        self.execution = 0
        self._step_json: tuple = (None, "")  # (the step record, its JSON): serialized once per step
        self._unreported: list[dict] = []  # ended entries of steps whose record no response carried
        self.ended_log: dict = {}  # request id -> its ended entry, the last ENDED_LOG: parameter "ended_of"

    # -- Triton plumbing ---------------------------------------------------------------------------------
    def _get(self, request):
        def get(name):
            t = self.pb.get_input_tensor_by_name(request, name)
            return None if t is None else t.as_numpy()

        return get

    def _parameters(self, request) -> dict:
        try:
            return json.loads(request.parameters() or "{}")
        except ValueError:
            return {}

    def _admit(self, request, key, step: int) -> Sequence | None:
        """A new sequence for ``request``, or None after answering it with an error."""
        sender = request.get_response_sender()
        try:
            ask = read_ask(
                self._get(request), self.context_length, self._parameters(request), default_seed=step
            )
        except BadInput as exc:
            err = self.pb.TritonError(f"{self.name}: {exc}")
            sender.send(
                self.pb.InferenceResponse(error=err), flags=self.pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL
            )
            return None
        seq = Sequence(key, request.request_id(), ask, self.model, step)
        seq.request, seq.sender = request, sender
        return seq

    def _cancelled(self, seq: Sequence) -> bool:
        now = time.monotonic()
        if now - seq.last_cancel_check < CANCEL_CHECK_S:
            return False
        seq.last_cancel_check = now
        return bool(seq.request.is_cancelled())

    def _send(self, seq: Sequence, text: str, record: dict, final: bool) -> None:
        if self._step_json[0] is not record:
            self._step_json = (record, json.dumps(record))
        info = response_json(seq, self._step_json[1], final, self.max_sequences, self.weights)
        if final and "ended_of" in (asked := self._parameters(seq.request)):  # how another request ended
            info = info[:-1] + ', "ended_of": ' + json.dumps(self.ended_log.get(str(asked["ended_of"]))) + "}"
        outputs = [
            self.pb.Tensor("text_output", np.array([[text.encode("utf-8")]], dtype=object)),
            self.pb.Tensor("iteration", np.array([[info.encode("utf-8")]], dtype=object)),
        ]
        flags = self.pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
        seq.sender.send(self.pb.InferenceResponse(output_tensors=outputs), flags=flags)

    def _close_cancelled(self, seq: Sequence) -> dict:
        freed = seq.free()
        seq.sender.send(flags=self.pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return self._ended(seq, "cancelled", freed)

    def _ended(self, seq: Sequence, reason: str, freed: int) -> dict:
        entry = {
            "request_id": seq.request_id,
            "sequence": seq.key,
            "reason": reason,
            "kv_bytes_freed": freed,
            "step": self.step,
            "at_ns": time.time_ns(),
        }
        self.ended_log[seq.request_id] = entry
        if len(self.ended_log) > ENDED_LOG:
            del self.ended_log[next(iter(self.ended_log))]
        return entry

    def _record(self, *args) -> dict:
        """:func:`step_record` with the ended sequences of earlier steps that no response carried (a cancelled
        sequence alone in its step: nobody was there to be told) put first."""
        record = step_record(*args)
        record["ended"][:0], self._unreported = self._unreported, []
        return record

    def _after_emitting(self, record: dict) -> None:
        if self._step_json[0] is not record:  # no response of this step was sent: keep its news for the next
            self._unreported.extend(record["ended"])

    def _compute(self, new: list[Sequence], running: list[Sequence]) -> tuple[dict, dict]:
        """Prefill ``new``, decode one token for ``running``; the tokens and phase of each sequence."""
        emitted, phase = {}, {}
        for s in new:
            phase[s.key] = "prefill"
            if s.ask.max_tokens == 0:
                s.finish = "length"
                emitted[s.key] = []
                continue
            emitted[s.key] = s.take(self.model.prefill(s.prompt, s.cache), self.context_length)
        if running:
            logits = self.model.decode([s.tokens[-1] for s in running], [s.cache for s in running])
            for s, row in zip(running, logits, strict=False):
                phase[s.key] = "decode"
                emitted[s.key] = s.take(row, self.context_length)
        return emitted, phase

    def _emit(self, seq: Sequence, record: dict) -> None:
        """Send this step's response of ``seq`` (streaming), or the whole answer when it is finished."""
        if seq.ask.stream or seq.finish:
            text = seq.unsent() if seq.ask.stream else seq.text
            self._send(seq, text, record, final=bool(seq.finish))

    # -- the two schedulers ------------------------------------------------------------------------------
    def execute(self, requests):
        if self.scheduler == IN_FLIGHT:
            self._step(requests)
        else:
            self._run_batch(requests)
        return None

    def _run_batch(self, requests) -> None:
        """Request-level batching: the whole batch, step by step, until its longest sequence ends."""
        self.execution += 1
        seqs = []
        for i, request in enumerate(requests):
            seq = self._admit(request, f"{self.execution}.{i}", self.step + 1)
            if seq is not None:
                seqs.append(seq)
        new, running = list(seqs), []
        while new or running:
            self.step += 1
            start = _now()
            emitted, phase = self._compute(new, running)
            end = _now()
            active = [*new, *running]
            ended = []
            for s in active:
                if not s.finish and self._cancelled(s):
                    ended.append(self._close_cancelled(s))
                    s.finish = "cancelled"
            idle = [s for s in seqs if s not in active]
            record = self._record(
                REQUEST_LEVEL, self.step, self.execution, start, end, active, idle, emitted, phase, ended
            )
            for s in active:
                if s.finish == "cancelled":
                    continue
                if s.finish:
                    record["ended"].append(self._ended(s, s.finish, s.free()))
            for s in active:
                if s.finish != "cancelled":
                    self._emit(s, record)
            self._after_emitting(record)
            new, running = [], [s for s in active if not s.finish]

    def _step(self, requests) -> None:
        """In-flight batching: one step for the sequences Triton put in this batch."""
        self.step += 1
        self.execution += 1
        start = _now()
        new, running = [], []
        for request in requests:
            key = request.correlation_id()
            if key == 0 and not request.request_id():
                continue  # a direct-strategy null request fills an empty slot; nothing to answer
            seq = self.sequences.get(key)
            if not request.flags() & START_FLAG and seq is None:
                err = self.pb.TritonError(
                    f"{self.name}: sequence {key} was freed (not seen for {GONE_AFTER_S:g} s)"
                )
                request.get_response_sender().send(
                    self.pb.InferenceResponse(error=err), flags=self.pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                )
                continue
            if request.flags() & START_FLAG:
                if seq is not None:  # Triton reused the id of a sequence this model still held
                    seq.free()
                seq = self._admit(request, key, self.step)
                if seq is None:
                    self.sequences.pop(key, None)
                    continue
                self.sequences[key] = seq
                new.append(seq)
            else:
                seq.request, seq.sender = request, request.get_response_sender()
                running.append(seq)
        present = {s.key for s in [*new, *running]}
        ended = self._sweep_gone(present)
        emitted, phase = self._compute(new, running)
        end = _now()
        active = [*new, *running]
        for s in active:
            s.last_seen_step, s.last_seen_s, s.missed = self.step, time.monotonic(), 0
            if not s.finish and self._cancelled(s):
                ended.append(self._close_cancelled(s))
                s.finish = "cancelled"
        record = self._record(
            IN_FLIGHT, self.step, self.execution, start, end, active, [], emitted, phase, ended
        )
        for s in active:
            if s.finish and s.finish != "cancelled":
                record["ended"].append(self._ended(s, s.finish, s.free()))
        for s in active:
            if s.finish == "cancelled":
                self.sequences.pop(s.key, None)
                continue
            if not s.finish:
                s.request.set_release_flags(self.pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            else:
                self.sequences.pop(s.key, None)
            self._emit(s, record)
        self._after_emitting(record)

    def _sweep_gone(self, present: set) -> list[dict]:
        """Free sequences Triton stopped sending (cancelled while waiting between steps)."""
        ended, now = [], time.monotonic()
        for key, s in list(self.sequences.items()):
            if key in present:
                continue
            s.missed += 1
            if s.missed >= GONE_AFTER_STEPS and now - s.last_seen_s >= GONE_AFTER_S:
                freed = s.free()
                del self.sequences[key]
                ended.append(self._ended(s, "gone", freed))
        return ended

    def finalize(self):
        for s in self.sequences.values():
            s.free()
        self.sequences.clear()
