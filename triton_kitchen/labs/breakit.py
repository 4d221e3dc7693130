"""The "break it" lab for the wire: each case makes a real mistake against the real server, keeps
the error the client or Triton really raised, then makes the fix and keeps what came back. Nothing is staged:
every message is the one this run produced.

Cases (``CASES``):

- ``grpc_limit``: hflip with a batch of 8 images answers 4.8 MB. A plain grpcio channel receives at most 4 MiB
  by default (gRPC's default, the number in its own error), so the answer fails with ``RESOURCE_EXHAUSTED``,
  *after* Triton took the 4.8 MB request and ran the model (its success count rises: Triton 2.51's server takes
  messages up to INT32_MAX). The fixes: the channel option ``grpc.max_receive_message_length``, or
  tritonclient's client, which sets both limits to ``tritonclient.grpc.MAX_GRPC_MESSAGE_SIZE``.
- ``decoupled_http``: the decoupled ``streamer`` over HTTP ``/infer`` (refused by Triton); the fixes: a gRPC
  stream, or Server-Sent Events at ``generate_stream``.
- ``bytes_nul``: a BYTES value ending in NUL bytes. numpy's fixed-width ``np.str_``/``np.bytes_`` drop trailing
  NULs; tritonclient refuses ``np.str_`` for BYTES and sends ``np.bytes_`` shortened, silently. ``streamer``
  echoes what it received. The fix: ``dtype=object`` with ``bytes`` elements.
- ``not_loaded``: a model name the server does not have, and a version it has not loaded, over HTTP and gRPC;
  the fix reads the repository index and asks for a model and version that are ready.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import CLASSIFIER, HFLIP, STREAMER
from triton_kitchen.core.endpoint import Endpoint

CASES = ("grpc_limit", "decoupled_http", "bytes_nul", "not_loaded")
BIG_BATCH = 8  # hflip's max_batch_size: 8 x 3 x 224 x 224 FP32 = 4.8 MB each way
NUL_TEXT = b"Triton\x00\x00"  # a value whose last two bytes are NUL
MISSING_MODEL = "classifier_v2"
TIMEOUT_S = 30.0

FIX_CODE = {
    "grpc_limit": (
        "channel = grpc.insecure_channel(url, options=[\n"
        '    ("grpc.max_receive_message_length", -1),  # or a size in bytes\n'
        "])\n"
        "# or tritonclient, which sets both limits to INT32_MAX:\n"
        "client = tritonclient.grpc.InferenceServerClient(url)"
    ),
    "decoupled_http": (
        "client = tritonclient.grpc.InferenceServerClient(url)\n"
        "client.start_stream(callback=on_response)\n"
        'client.async_stream_infer("streamer", inputs)\n'
        "# or HTTP Server-Sent Events:\n"
        'POST /v2/models/streamer/generate_stream  {"text": "..."}'
    ),
    "bytes_nul": (
        'value = np.array([b"Triton\\x00\\x00"], dtype=object)  # not np.str_ / np.bytes_\n'
        'text_input = tritonclient.grpc.InferInput("text", [1], "BYTES")\n'
        "text_input.set_data_from_numpy(value)"
    ),
    "not_loaded": (
        'index = requests.post(f"{url}/v2/repository/index").json()\n'
        'ready = [m for m in index if m.get("state") == "READY"]\n'
        'client.infer(m["name"], inputs, model_version=m["version"])'
    ),
}


@dataclass
class Attempt:
    """One try: ``kind`` names it (a ``[lab_break]`` key's suffix), ``ok``, and the real message (the error's
    text as raised, or what came back)."""

    kind: str
    ok: bool
    message: str
    code: str = ""  # gRPC status code or HTTP status, when there is one
    detail: dict[str, Any] = field(default_factory=dict)
    # what came back, in the reader's words: a ``[lab_break] got_<key>`` message and its values (``message`` then
    # holds the same in plain English, for logs and tests)
    got_key: str = ""
    got: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseResult:
    case: str
    broken: list[Attempt]
    fixed: list[Attempt]
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def fix_code(self) -> str:
        return FIX_CODE[self.case]


def run_case(endpoint: Endpoint, case: str) -> CaseResult:
    """Break it, then fix it, against ``endpoint`` (raises KeyError for an unknown case)."""
    return {
        "grpc_limit": grpc_limit,
        "decoupled_http": decoupled_http,
        "bytes_nul": bytes_nul,
        "not_loaded": not_loaded,
    }[case](endpoint)


def _exc_text(exc: Exception) -> str:
    message = getattr(exc, "message", None)
    text = message() if callable(message) else None
    return str(text or exc)


# -- gRPC's 4 MiB receive limit --------------------------------------------------------------------------
def _big_request(batch: int = BIG_BATCH):
    from tritonclient.grpc import service_pb2

    from triton_kitchen.core.samples import SAMPLE_PHOTOS, image_tensor, sample_jpeg

    x = np.repeat(image_tensor(sample_jpeg(SAMPLE_PHOTOS[0])), batch, axis=0).astype(np.float32)
    req = service_pb2.ModelInferRequest(model_name=HFLIP)
    tensor = req.inputs.add()
    tensor.name, tensor.datatype = "image", "FP32"
    tensor.shape.extend(x.shape)
    req.raw_input_contents.append(x.tobytes())
    return req, x


def _plain_grpc(endpoint: Endpoint, req, options=None) -> tuple[Attempt, int]:
    """A plain grpcio stub (no tritonclient), with the channel ``options`` given: the attempt and reply bytes."""
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    kind = "plain_grpc" if not options else "plain_grpc_option"
    with grpc.insecure_channel(endpoint.grpc_url, options=options or []) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        try:
            reply = stub.ModelInfer(req, timeout=TIMEOUT_S)
        except grpc.RpcError as exc:
            return Attempt(kind, False, exc.details() or str(exc), exc.code().name), 0
    size = reply.ByteSize()
    attempt = Attempt(kind, True, f"{size} bytes", "OK", {"reply_bytes": size}, "size", {"n": size})
    return attempt, size


def _successes(endpoint: Endpoint, model: str) -> int:
    stats = kserve.statistics(endpoint, model)["model_stats"][0]
    return int(stats["inference_stats"]["success"]["count"])


def grpc_limit(endpoint: Endpoint) -> CaseResult:
    import tritonclient.grpc as grpcclient

    req, x = _big_request()
    before = _successes(endpoint, HFLIP)
    broken, _ = _plain_grpc(endpoint, req)
    time.sleep(0.3)  # the step's statistics land a moment after its answer
    ran = _successes(endpoint, HFLIP) - before
    limit = re.search(r"larger than max \((\d+) vs\. (\d+)\)", broken.message)
    broken.detail = {"server_ran": ran}
    fixed_option, _ = _plain_grpc(endpoint, req, [("grpc.max_receive_message_length", -1)])
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    try:
        inp = grpcclient.InferInput("image", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        result = client.infer(HFLIP, [inp], client_timeout=TIMEOUT_S)
        out = result.as_numpy("mirrored")
        got = {"shape": list(out.shape), "n": out.nbytes}
        fixed_client = Attempt(
            "tritonclient",
            True,
            f"mirrored {got['shape']}, {got['n']} bytes",
            "OK",
            got_key="mirrored",
            got=got,
        )
    except Exception as exc:  # noqa: BLE001 - the client's own error, shown as it is
        fixed_client = Attempt("tritonclient", False, _exc_text(exc))
    finally:
        client.close()
    facts = {
        "request_bytes": req.ByteSize(),
        "reply_bytes": int(limit.group(1)) if limit else None,
        "grpc_default_receive": int(limit.group(2)) if limit else None,
        "tritonclient_limit": grpcclient.MAX_GRPC_MESSAGE_SIZE,
        "server_ran": ran,
    }
    return CaseResult("grpc_limit", [broken], [fixed_option, fixed_client], facts)


# -- a decoupled model over plain HTTP -------------------------------------------------------------------
def decoupled_http(endpoint: Endpoint) -> CaseResult:
    import tritonclient.http as httpclient

    from triton_kitchen.core import clients
    from triton_kitchen.tools.protocols import streaming

    text = "break it, then fix it"
    with clients.http(endpoint) as client:
        inp = httpclient.InferInput("text", [1], "BYTES")
        inp.set_data_from_numpy(np.array([text.encode()], dtype=object))
        try:
            client.infer(STREAMER, [inp])
            broken = Attempt("http_infer", True, "answered")
        except Exception as exc:  # noqa: BLE001 - Triton's refusal, shown as it is
            broken = Attempt(
                "http_infer", False, _exc_text(exc), str(getattr(exc, "status", lambda: "")() or "")
            )
    fixed = []
    for kind, run in (
        ("grpc_stream", streaming.stream_grpc(endpoint, text, delay_ms=0, timeout_s=TIMEOUT_S)),
        ("sse", streaming.stream_sse(endpoint, text, delay_ms=0, timeout_s=TIMEOUT_S)),
    ):
        ok = run.error is None and bool(run.tokens)
        message = run.error or " | ".join(run.tokens)
        fixed.append(Attempt(kind, ok, message, detail={"tokens": len(run.tokens)}))
    return CaseResult("decoupled_http", [broken], fixed, {"text": text})


# -- BYTES with trailing NULs ----------------------------------------------------------------------------
def echo(endpoint: Endpoint, value: np.ndarray) -> bytes:
    """What ``streamer`` received: it streams its text input back (one token here: NUL is no space)."""
    import queue

    import tritonclient.grpc as grpcclient

    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    text = grpcclient.InferInput("text", [1], "BYTES")
    text.set_data_from_numpy(value)  # raises for np.str_: the client's own check
    delay = grpcclient.InferInput("delay_ms", [1], "INT32")
    delay.set_data_from_numpy(np.array([0], dtype=np.int32))
    got = b""
    try:
        client.start_stream(
            callback=lambda result, error: events.put((result, error)), stream_timeout=TIMEOUT_S
        )
        client.async_stream_infer(STREAMER, [text, delay], enable_empty_final_response=True)
        while True:
            result, error = events.get(timeout=TIMEOUT_S)
            if error is not None:
                raise RuntimeError(_exc_text(error))
            token = result.as_numpy("token")
            if token is not None and token.size:
                got += bytes(token.reshape(-1)[0])
            final = result.get_response().parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                return got
    finally:
        client.stop_stream()
        client.close()


def _echo_attempt(endpoint: Endpoint, kind: str, value: np.ndarray) -> Attempt:
    detail = {"dtype": str(value.dtype), "held": repr(value.reshape(-1)[0])}
    try:
        got = echo(endpoint, value)
    except Exception as exc:  # noqa: BLE001 - the client's (or server's) real error
        return Attempt(kind, False, _exc_text(exc), detail=detail)
    detail["received"] = repr(got)
    words = {"n": len(got), "value": repr(got)}
    return Attempt(
        kind, got == NUL_TEXT, f"{len(got)} bytes: {got!r}", detail=detail, got_key="value", got=words
    )


def bytes_nul(endpoint: Endpoint) -> CaseResult:
    as_str = np.array([NUL_TEXT.decode()], dtype=np.str_)
    as_bytes = np.array([NUL_TEXT], dtype=np.bytes_)
    as_object = np.array([NUL_TEXT], dtype=object)
    broken = [_echo_attempt(endpoint, "np_str", as_str), _echo_attempt(endpoint, "np_bytes", as_bytes)]
    fixed = [_echo_attempt(endpoint, "np_object", as_object)]
    return CaseResult("bytes_nul", broken, fixed, {"sent": repr(NUL_TEXT), "sent_len": len(NUL_TEXT)})


# -- a model that is not loaded --------------------------------------------------------------------------
def _infer(endpoint: Endpoint, protocol: str, model: str, version: str = "") -> Attempt:
    from triton_kitchen.core import clients
    from triton_kitchen.core.samples import SAMPLE_PHOTOS, image_tensor, sample_jpeg

    x = image_tensor(sample_jpeg(SAMPLE_PHOTOS[0]))
    kind = f"{protocol}_{'version' if version else 'name'}"
    try:
        if protocol == "grpc":
            import tritonclient.grpc as tc

            inp = tc.InferInput("input", list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            result = clients.grpc_client(endpoint).infer(
                model, [inp], model_version=version, client_timeout=TIMEOUT_S
            )
        else:
            import tritonclient.http as tc

            inp = tc.InferInput("input", list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            with clients.http(endpoint) as client:
                result = client.infer(model, [inp], model_version=version)
        logits = result.as_numpy("logits")
        return Attempt(kind, True, f"{model} v{version or '(latest)'}: logits {list(logits.shape)}", "OK")
    except Exception as exc:  # noqa: BLE001 - Triton's own refusal
        status = getattr(exc, "status", None)
        return Attempt(
            kind, False, _exc_text(exc), str(status() if callable(status) else "").removeprefix("StatusCode.")
        )


def not_loaded(endpoint: Endpoint) -> CaseResult:
    try:
        index = kserve.repository_index(endpoint)
    except kserve.KServeError as exc:  # a server that keeps its repository API to itself
        index, note = [], _exc_text(exc)
    else:
        note = ""
    row = next((m for m in index if m.get("name") == CLASSIFIER and m.get("state") == "READY"), None)
    version = str(row.get("version", "1")) if row else "1"
    missing_version = str(int(version) + 1)
    broken = [_infer(endpoint, p, MISSING_MODEL) for p in ("http", "grpc")] + [
        _infer(endpoint, p, CLASSIFIER, missing_version) for p in ("http", "grpc")
    ]
    fixed = [_infer(endpoint, p, CLASSIFIER, version) for p in ("http", "grpc")]
    facts = {
        "ready": sorted(f"{m['name']} v{m.get('version', '?')}" for m in index if m.get("state") == "READY"),
        "missing_version": missing_version,
        "index_refused": note,
    }
    return CaseResult("not_loaded", broken, fixed, facts)
