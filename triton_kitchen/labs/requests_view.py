"""The actual request for an input, as the Python clients build it (chapters 4 and 5).

* :func:`request_inputs` -- a photo -> the tensors a model takes (``image_classifier``: the JPEG as
  BYTES ``[1, 1]``; ``ensemble_pipeline``: the preprocessed FP32 ``[1, 3, 224, 224]``);
* :func:`http_request` -- the body ``tritonclient.http`` sends (``generate_request_body``, the code
  its ``infer()`` uses), split into JSON header and binary tail, with the HTTP headers and sizes,
  and a curl command that sends the same bytes;
* :func:`send_http` -- POST exactly those bytes to a server and split the answer the same way;
* :func:`grpc_request` -- the ``ModelInferRequest`` protobuf ``tritonclient.grpc`` builds, its
  serialized size and the size of each field.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import text_format
from tritonclient.grpc import service_pb2

from triton_kitchen.core.catalog import ENSEMBLE_PIPELINE, IMAGE_CLASSIFIER
from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.core.imaging import preprocess_bytes
from triton_kitchen.tools.protocols.call import infer_request_message

HTTP_HEADER_NAME = "Inference-Header-Content-Length"
USER_AGENT = "python/gevent-http-client"
GRPC_PREFIX_BYTES = 5  # gRPC length-prefixed message: 1 byte compressed flag + 4 bytes length


_SCALAR_LIST = re.compile(r"\[\s*((?:[-\w.\"' ]+,\s*)*[-\w.\"' ]+)\s*\]")


def pretty_json(doc) -> str:
    """Indented JSON with short lists of scalars kept on one line (shapes, cut data)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    return _SCALAR_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


@dataclass
class Tensor:
    name: str
    array: np.ndarray
    datatype: str

    @property
    def shape(self) -> list[int]:
        return list(self.array.shape)

    @property
    def raw_bytes(self) -> int:
        """Bytes of the tensor as raw data (BYTES: each element with its 4-byte length prefix)."""
        if self.datatype == "BYTES":
            return sum(4 + len(x) for x in self.array.reshape(-1))
        return int(self.array.nbytes)


# model -> (input name, kind, output names)
MODELS = {
    ENSEMBLE_PIPELINE: ("input_image", "pixels", ["output_label"]),
    IMAGE_CLASSIFIER: ("image_bytes", "jpeg", ["top5_labels", "top5_scores"]),
}


def request_inputs(model: str, image: bytes) -> list[Tensor]:
    """The tensors ``model`` takes for this photo, built as a client would build them."""
    if model not in MODELS:
        raise ValueError(f"no request recipe for model {model!r}; expected one of {sorted(MODELS)}")
    name, kind, _ = MODELS[model]
    if kind == "jpeg":
        return [Tensor(name, np.array([[image]], dtype=object), "BYTES")]
    return [Tensor(name, preprocess_bytes(image)[None, ...].astype(np.float32), "FP32")]


def request_outputs(model: str) -> list[str]:
    return list(MODELS[model][2])


@dataclass
class HttpRequestView:
    model: str
    binary: bool
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json_size: int  # length of the JSON part (the whole body when not binary)
    tensor_bytes: int  # raw tensor bytes as held in memory

    @property
    def json_text(self) -> str:
        return self.body[: self.json_size].decode("utf-8", errors="replace")

    @property
    def binary_size(self) -> int:
        return len(self.body) - self.json_size

    @property
    def body_size(self) -> int:
        return len(self.body)

    @property
    def head_text(self) -> str:
        lines = [f"{self.method} {self.path} HTTP/1.1"] + [f"{k}: {v}" for k, v in self.headers.items()]
        return "\r\n".join(lines) + "\r\n\r\n"

    @property
    def head_size(self) -> int:
        return len(self.head_text.encode())

    @property
    def wire_size(self) -> int:
        """Request line + headers + body: the bytes written to the socket (computed)."""
        return self.head_size + self.body_size

    def json_preview(self, max_chars: int = 1500) -> str:
        """The JSON part, pretty-printed, long number lists cut in the middle."""
        try:
            doc = json.loads(self.json_text)
        except ValueError:
            return self.json_text[:max_chars]
        for item in doc.get("inputs", []):
            data = item.get("data")
            if isinstance(data, list) and len(data) > 6:
                item["data"] = [*data[:3], f"... {len(data) - 6} more ...", *data[-3:]]
        text = pretty_json(doc)
        return text if len(text) <= max_chars else text[:max_chars] + "\n..."

    def binary_preview(self, n: int = 48) -> str:
        tail = self.body[self.json_size : self.json_size + n]
        return " ".join(f"{b:02x}" for b in tail) + (" ..." if self.binary_size > n else "")

    def curl(self, url: str, filename: str | None = None) -> str:
        """A curl command that POSTs the same body (saved as ``filename``) with the same headers."""
        filename = filename or ("body.bin" if self.binary else "request.json")
        parts = [f"curl -s -X POST http://{url}{self.path}"]
        if self.binary:
            parts.append(f'-H "{HTTP_HEADER_NAME}: {self.json_size}"')
            parts.append(f"--data-binary @{filename}")
        else:
            parts.append("-H 'Content-Type: application/json'")
            parts.append(f"--data-binary @{filename}")
        parts.append("-o response.bin -D -")
        return " \\\n     ".join(parts)


def http_request(
    model: str, inputs: list[Tensor], outputs: list[str], binary: bool = True, host: str = "localhost:8000"
) -> HttpRequestView:
    """The request ``tritonclient.http`` sends for these tensors (binary_data as given, default True)."""
    infer_inputs = []
    for tensor in inputs:
        inp = httpclient.InferInput(tensor.name, tensor.shape, tensor.datatype)
        inp.set_data_from_numpy(tensor.array, binary_data=binary)
        infer_inputs.append(inp)
    infer_outputs = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in outputs]
    body, json_size = httpclient.InferenceServerClient.generate_request_body(
        infer_inputs, outputs=infer_outputs
    )
    body = body.encode() if isinstance(body, str) else bytes(body)
    headers = {
        "Host": host,
        "User-Agent": USER_AGENT,
        "Content-Length": str(len(body)),
    }
    if json_size is not None:
        headers[HTTP_HEADER_NAME] = str(json_size)
    return HttpRequestView(
        model=model,
        binary=json_size is not None,
        method="POST",
        path=f"/v2/models/{model}/infer",
        headers=headers,
        body=body,
        json_size=json_size if json_size is not None else len(body),
        tensor_bytes=sum(t.raw_bytes for t in inputs),
    )


@dataclass
class HttpResponseView:
    status: int
    headers: dict[str, str]
    json_text: str
    binary_size: int
    body_size: int
    ms: float
    outputs: dict[str, list] = field(default_factory=dict)

    def output_form(self) -> str | None:
        """How the answer carried its outputs: ``binary`` (raw bytes after the JSON header) or ``json``
        (numbers in the JSON); None for an error answer."""
        if self.status != 200:
            return None
        return "binary" if self.binary_size > 0 else "json"

    def json_preview(self, max_chars: int = 1500) -> str:
        try:
            doc = json.loads(self.json_text)
        except ValueError:
            return self.json_text[:max_chars]
        for item in doc.get("outputs", []):
            data = item.get("data")
            if isinstance(data, list) and len(data) > 8:
                item["data"] = [*data[:4], f"... {len(data) - 8} more ...", *data[-4:]]
        text = pretty_json(doc)
        return text if len(text) <= max_chars else text[:max_chars] + "\n..."


def send_http(endpoint: Endpoint, view: HttpRequestView, timeout: float = 30.0) -> HttpResponseView:
    """POST the exact body of ``view`` and split the answer into JSON header and binary tail.

    Triton's errors (HTTP 400 with a JSON ``error``) come back as a view too; only a dead server raises
    (an OSError). An inference, so not :mod:`~triton_kitchen.core.kserve`'s, but on the same ``http.client``:
    the page shows the answer's headers, which kserve does not return.
    """
    headers = {k: v for k, v in view.headers.items() if k not in ("Host", "Content-Length")}
    host, port = split_host_port(endpoint.http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.perf_counter()
    try:
        conn.request("POST", view.path, body=view.body, headers=headers)
        resp = conn.getresponse()
        status, resp_headers, body = resp.status, dict(resp.getheaders()), resp.read()
    except http.client.HTTPException as exc:  # not HTTP at all (a gRPC port, say): nothing we can talk to
        raise ConnectionError(f"POST {view.path}: {type(exc).__name__}: {exc}") from exc
    finally:
        conn.close()
    ms = (time.perf_counter() - t0) * 1000
    json_size = int(resp_headers.get(HTTP_HEADER_NAME, len(body)))
    return HttpResponseView(
        status=status,
        headers=resp_headers,
        json_text=body[:json_size].decode("utf-8", errors="replace"),
        binary_size=len(body) - json_size,
        body_size=len(body),
        ms=ms,
    )


@dataclass
class GrpcRequestView:
    model: str
    message: service_pb2.ModelInferRequest
    tensor_bytes: int
    fields: list[dict] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.message.ByteSize()

    @property
    def framed_size(self) -> int:
        """Size with gRPC's 5-byte length prefix (HTTP/2 frame headers not included; computed)."""
        return self.size + GRPC_PREFIX_BYTES

    @property
    def envelope_bytes(self) -> int:
        """Everything in the message that is not raw tensor data."""
        return self.size - self.tensor_bytes

    def text(self, max_bytes: int = 16) -> str:
        """The message in protobuf text format, raw contents shortened to their first bytes."""
        shown = service_pb2.ModelInferRequest()
        shown.CopyFrom(self.message)
        del shown.raw_input_contents[:]
        out = text_format.MessageToString(shown, as_utf8=True)
        for raw in self.message.raw_input_contents:
            head = "".join(f"\\x{b:02x}" for b in raw[:max_bytes])
            out += f'raw_input_contents: "{head}..."  # {len(raw):,} bytes\n'
        return out


def grpc_request(model: str, inputs: list[Tensor], outputs: list[str]) -> GrpcRequestView:
    """The ModelInferRequest ``tritonclient.grpc``'s ``infer()`` builds for these tensors."""
    infer_inputs = []
    for tensor in inputs:
        inp = grpcclient.InferInput(tensor.name, tensor.shape, tensor.datatype)
        inp.set_data_from_numpy(tensor.array)
        infer_inputs.append(inp)
    infer_outputs = [grpcclient.InferRequestedOutput(name) for name in outputs]
    message = infer_request_message(model, infer_inputs, infer_outputs)  # what the lab's Caller sends too
    view = GrpcRequestView(
        model=model, message=message, tensor_bytes=sum(len(r) for r in message.raw_input_contents)
    )
    view.fields = field_sizes(message)
    return view


def field_sizes(message) -> list[dict]:
    """Each set top-level field of a protobuf message with its encoded size (tag and length included)."""
    rows = []
    for desc, value in message.ListFields():
        single = type(message)()
        is_map = desc.message_type is not None and desc.message_type.GetOptions().map_entry
        if is_map:
            for key, item in value.items():
                getattr(single, desc.name)[key].CopyFrom(item)
        elif desc.label == desc.LABEL_REPEATED:
            getattr(single, desc.name).extend(value)
        elif desc.message_type:
            getattr(single, desc.name).CopyFrom(value)
        else:
            setattr(single, desc.name, value)
        count = len(value) if desc.label == desc.LABEL_REPEATED else 1
        rows.append({"field": desc.name, "number": desc.number, "count": count, "bytes": single.ByteSize()})
    return rows


# -- shared memory: what crosses the socket when the tensors do not ---------------------------------------
@dataclass
class ShmRequestView:
    """One real request through system shared memory (``http-shm`` or ``grpc-shm``): the message that crossed
    the socket (it names the region and each tensor's offset instead of carrying it), and the server's own
    list of registered regions while the request ran and after the region was let go."""

    protocol: str
    region: str
    inputs: list[dict]  # name, offset, byte_size in the region
    outputs: list[dict]
    text: str  # the JSON body, or the ModelInferRequest in protobuf text format
    size: int  # bytes of that message
    tensor_bytes: int  # bytes that went through memory instead (inputs written, outputs answered)
    answer: dict[str, list[int]]  # the outputs the server wrote into the region, by shape
    server_regions: list[dict]  # the server's registered regions during the request (ours among them)
    left_after: list[str]  # our region's name if the server still listed it after the caller closed


def shm_request(endpoint, model: str, image: bytes, protocol: str = "grpc-shm") -> ShmRequestView:
    """Send one request for this photo through shared memory (the embedded server: it must map this machine's
    memory) and show what crossed the socket. Raises protocols.ProtocolError when it cannot be done."""
    from triton_kitchen.core import kserve
    from triton_kitchen.tools.protocols.shm import ShmCaller

    tensors = request_inputs(model, image)
    caller = ShmCaller(
        endpoint, protocol, model, {t.name: t.array for t in tensors}, output_names=request_outputs(model)
    )
    try:
        result = caller.call()
        if protocol == "http-shm":
            body, _ = caller.encode_http()
            text, size = pretty_json(json.loads(body)), len(body)
        else:
            message = infer_request_message(model, *caller.grpc_request())
            text, size = text_format.MessageToString(message, as_utf8=True), message.ByteSize()
        regions = kserve.system_shm_status(endpoint)
        view = ShmRequestView(
            protocol=protocol,
            region=caller.region,
            inputs=[{"name": n, "offset": o, "byte_size": s} for n, (o, s) in caller._inputs.items()],
            outputs=[{"name": n, "offset": o, "byte_size": s} for n, (o, s) in caller._outputs.items()],
            text=text,
            size=size,
            tensor_bytes=result.shm_bytes,
            answer={k: list(np.shape(v)) for k, v in result.outputs.items()},
            server_regions=[r for r in regions if r.get("name") == caller.region],
            left_after=[],
        )
    finally:
        caller.close()
    view.left_after = [r["name"] for r in kserve.system_shm_status(endpoint) if r.get("name") == view.region]
    return view
