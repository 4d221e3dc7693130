"""Model metadata (inputs, outputs, batching, decoupled) and one synthesized request for any model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.samples import image_tensor, sample_jpeg
from triton_kitchen.tools.protocols.call import DEFAULT_TIMEOUT_S, ProtocolError, check_protocol, grpc_kind

# KServeError codes -> ProtocolError kinds (Triton answered with an error, or not JSON: "server")
_KSERVE_KINDS = {"connection": "connection", "timeout": "timeout"}


@dataclass
class TensorInfo:
    name: str
    datatype: str
    shape: list[int]  # with the batch dimension (-1) first when the model batches
    optional: bool = False


@dataclass
class ModelInfo:
    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    max_batch_size: int = 0
    decoupled: bool = False


def protocol_error(exc: kserve.KServeError) -> ProtocolError:
    """A REST failure as the ProtocolError the protocol lab and the load engine expect."""
    return ProtocolError(exc.detail or str(exc), _KSERVE_KINDS.get(exc.code, "server"))


def model_info(
    endpoint: Endpoint, model: str, protocol: str = "http-binary", timeout: float = DEFAULT_TIMEOUT_S
) -> ModelInfo:
    """Inputs, outputs, ``max_batch_size`` and decoupled-ness of ``model``, asked over ``protocol``."""
    if check_protocol(protocol) == "grpc":
        client = grpcclient.InferenceServerClient(endpoint.grpc_url)
        try:
            meta = client.get_model_metadata(model, as_json=True, client_timeout=timeout)
            config = client.get_model_config(model, as_json=True, client_timeout=timeout).get("config", {})
        except InferenceServerException as exc:
            raise ProtocolError(exc.message() or str(exc), grpc_kind(exc)) from exc
        finally:
            client.close()
    else:
        try:
            meta = kserve.model_metadata(endpoint, model, timeout)
            config = kserve.model_config(endpoint, model, timeout)
        except kserve.KServeError as exc:
            raise protocol_error(exc) from exc
    optional = {i["name"] for i in config.get("input", []) if i.get("optional")}

    def tensors(items):
        return [
            TensorInfo(t["name"], t["datatype"], [int(d) for d in t["shape"]], t["name"] in optional)
            for t in items
        ]

    return ModelInfo(
        name=model,
        inputs=tensors(meta.get("inputs", [])),
        outputs=tensors(meta.get("outputs", [])),
        max_batch_size=int(config.get("max_batch_size", 0) or 0),
        decoupled=bool(config.get("model_transaction_policy", {}).get("decoupled", False)),
    )


def synthesize_inputs(
    info: ModelInfo,
    image: bytes | None = None,
    text: str = "Triton serves models over HTTP and gRPC",
    include_optional: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """One batch-1 request for any model, from its metadata.

    Variable dimensions (-1) become 1. An FP32 [..., 3, 224, 224] input gets ``image`` preprocessed
    (a real photo) when one is given; other numbers are seeded random values; BYTES inputs get
    ``image`` when their name mentions an image or bytes, else ``text``."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for t in info.inputs:
        if t.optional and not include_optional:
            continue
        shape = [d if d > 0 else 1 for d in t.shape]
        if t.datatype == "BYTES":
            wants_image = image is not None and any(
                k in t.name.lower() for k in ("image", "img", "bytes", "jpeg")
            )
            value = image if wants_image else text.encode()
            arrays[t.name] = np.full(shape, value, dtype=object)
        elif t.datatype == "BOOL":
            arrays[t.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif t.datatype.startswith(("FP", "BF")):
            if image is not None and t.datatype == "FP32" and shape[-3:] == [3, 224, 224]:
                arrays[t.name] = np.broadcast_to(
                    image_tensor(image).reshape([1] * (len(shape) - 3) + [3, 224, 224]), shape
                ).copy()
            else:
                dtype = np.float32 if t.datatype == "BF16" else triton_to_np_dtype(t.datatype)
                arrays[t.name] = rng.standard_normal(size=shape).astype(dtype)
        else:
            arrays[t.name] = rng.integers(0, 10, size=shape).astype(triton_to_np_dtype(t.datatype))
    return arrays


def sample_inputs(
    endpoint: Endpoint,
    model: str,
    protocol: str = "http-binary",
    image: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[ModelInfo, dict[str, np.ndarray]]:
    """Model metadata and one request for ``model``: the sample photo for image models, else synthesized."""
    info = model_info(endpoint, model, protocol, timeout)
    return info, synthesize_inputs(info, image=image if image is not None else sample_jpeg())
